#pragma once
// HDF5 writing an existing file through its rollback journal (io/journal.hpp): a file driver
// like HDF5's default one (POSIX pread/pwrite, HDF5's own flock), except that every write and
// truncation below the file's original size first has the journal save the bytes it replaces.
// Internal to io/ (matrix_writer, dataset_in_file).
#include <hdf5.h>

#include "io/hdf5_handle.hpp"
#include "io/journal.hpp"

namespace tessera::io::hdf5 {

// A file-access property list whose files are written through `journal` (which must outlive
// every file opened with it), every object closed with the file (H5F_CLOSE_STRONG).
Handle journaled_access(RollbackJournal& journal);

}  // namespace tessera::io::hdf5
