#pragma once
// C as a new dataset of an existing HDF5 file (--c FILE:/PATH where FILE exists): the checks made
// before anything is computed, the temporary dataset the result is written into, and the
// clean-up of one that a run which died left behind. Internal to io/ (matrix_writer, cleanup).
//
// The temporary dataset is a link of the root group named "<leaf>.tessera-partial-<host>-<pid>"
// (io::temporary_name of PATH's last component): contiguous, its space allocated when it is
// created, so the ranks write their rows at known offsets without HDF5 (io/direct_io.hpp). The
// file is closed while the job computes, so a run that dies leaves a valid file holding one more
// link; the commit reopens it, writes the attributes and moves the link to PATH (H5Lmove).
#include <hdf5.h>

#include <string>
#include <vector>

#include "io/hdf5_handle.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::io::hdf5 {

// Opens an existing output file read-write (every object closed with it). Throws InputError when
// it is not an HDF5 file, or cannot be written; IoError when HDF5 cannot lock it (another program
// has it open for writing).
Handle open_file_readwrite(const std::string& file);

// Where C goes in an open existing file: every level above PATH must be a group (or not exist
// yet: it is created at commit), reached through links of this file (an external link would
// write another file); PATH itself must not exist, or with `overwrite` be a dataset (a hard link:
// the dataset, not a link that names another object, is what --overwrite replaces). Throws
// InputError naming the file and the level.
void check_dataset_target(hid_t file, const DatasetRef& target, bool overwrite);

// This process's temporary dataset for `target`, an absolute path in the root group.
std::string temporary_dataset(const DatasetRef& target);

}  // namespace tessera::io::hdf5

namespace tessera::io {

// Temporary datasets in `file`'s root group left by runs of this host that died (their process
// is gone): removed, one line each for the user (others, of live runs or other hosts, are named
// and kept). Nothing is written when there is nothing to remove; a file that is not HDF5, or
// cannot be opened, has none.
std::vector<std::string> clean_stale_datasets(const std::string& file);

}  // namespace tessera::io
