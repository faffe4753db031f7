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
#include "io/journal.hpp"

namespace tessera::io::hdf5 {

// Opens an existing output file read-write (every object closed with it), through `journal`
// (io/journal_driver.hpp) when one is given. Throws InputError when it is not an HDF5 file, or
// cannot be written; IoError when HDF5 cannot lock it (another program has it open for writing).
Handle open_file_readwrite(const std::string& file, RollbackJournal* journal = nullptr);

// An existing output file open for writing through its journal for one step (the temporary
// dataset made, a block written, the commit). close() flushes and closes it, and throws IoError
// with the system's reason (a full disk) when any write failed. Destroyed while still open (an
// exception), HDF5's closing writes are dropped: the run rolls the file back anyway.
class JournaledWrite {
 public:
  JournaledWrite(const std::string& file, RollbackJournal& journal);
  ~JournaledWrite();
  JournaledWrite(const JournaledWrite&) = delete;
  JournaledWrite& operator=(const JournaledWrite&) = delete;
  hid_t get() const { return file_.get(); }
  // Closes an object of the file (a dataset), as close() closes the file.
  void close(Handle& object, const std::string& what);
  void close(const std::string& what);

 private:
  RollbackJournal& journal_;
  std::string name_;
  Handle file_;
};

// Every check of an existing output file that comes before anything is written to it, made on
// the file opened read-only (so a refused run leaves it byte for byte as it was): an HDF5 file,
// writable, PATH a place for C (check_dataset_target). Throws InputError.
void check_existing_output(const DatasetRef& target, bool overwrite);

// Where C goes in an open existing file: every level above PATH must be a group (or not exist
// yet: it is created at commit), reached through links of this file (an external link would
// write another file); PATH itself must not exist, or with `overwrite` be a dataset (a hard link:
// the dataset, not a link that names another object, is what --overwrite replaces). Throws
// InputError naming the file and the level.
void check_dataset_target(hid_t file, const DatasetRef& target, bool overwrite);

// This process's temporary dataset for `target`, an absolute path in the root group.
std::string temporary_dataset(const DatasetRef& target);

// Temporary datasets in the open `file`'s root group left by runs of this host that died (their
// process is gone; runs of tessera before the journal, io/journal.hpp, could leave them):
// removed, one line each for the user (others, of live runs or other hosts, are named and kept).
std::vector<std::string> remove_dead_leftovers(hid_t file, const std::string& name);

}  // namespace tessera::io::hdf5
