// A result written as a new dataset of an existing HDF5 file (MatrixWriter with
// ExistingFile::add_dataset): the temporary dataset made and its space taken, then the commit,
// every change through the file's rollback journal (io/journal.hpp), signals held meanwhile.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <algorithm>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/dataset_in_file.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_attributes.hpp"
#include "io/journal.hpp"
#include "io/journal_format.hpp"
#include "io/matrix_writer_impl.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

using namespace hdf5;

// The temporary dataset in the existing output file, contiguous with its space allocated now (so
// the ranks can pwrite their rows at its offset), then the file closed again: while the job
// computes, HDF5 holds nothing of it open, so a run that dies leaves a valid file.
void MatrixWriter::Impl::create_in_existing_file(hid_t dcpl, const std::vector<hsize_t>& dims) {
  Impl& w = *this;
  const std::lock_guard<std::mutex> hold(hdf5::lock());
  // Refused before anything is written: the file is only read until every check has passed.
  check_existing_output(w.target, w.overwrite);
  w.journal = std::make_unique<RollbackJournal>(w.target.file);
  const RollbackJournal::HoldSignals held;
  JournaledWrite out(w.target.file, *w.journal);
  w.notes = remove_dead_leftovers(out.get(), w.target.file);
  check_dataset_target(out.get(), w.target, w.overwrite);
  w.temp_dataset = temporary_dataset(w.target);
  const std::string what = "cannot create the temporary dataset " + in_quotes(w.target.file + ":" + w.temp_dataset);
  if (H5Lexists(out.get(), w.temp_dataset.c_str(), H5P_DEFAULT) != 0)
    throw IoError(what + ": it already exists (left by an earlier run?); remove it");
  // Contiguous: the space allocated now, for the ranks' pwrite (chunks are placed by HDF5 as written).
  const bool contiguous = H5Pget_layout(dcpl) == H5D_CONTIGUOUS;
  if (contiguous &&
      (H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0))
    throw_io(what);
  const bool empty = std::find(dims.begin(), dims.end(), hsize_t{0}) != dims.end();
  Handle space = own_space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  if (!space.valid()) throw_io(what);
  const Handle type = own_type(stored_file_type(w.stored, w.dtype));
  if (!type.valid()) throw_io(what);
  const hid_t file_type = type.get();
  Handle made = own_dataset(
      H5Dcreate2(out.get(), w.temp_dataset.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl, H5P_DEFAULT));
  if (!made.valid()) throw_io(what);
  w.dataset_created = true;
  // pwrite needs the dataset's offset in the file as a whole: HDF5's addresses start after a
  // user block (MATLAB's .mat files have one), so such files are written through HDF5 instead.
  hsize_t userblock = 1;
  Handle fcpl = own_plist(H5Fget_create_plist(out.get()));
  const bool plain = fcpl.valid() && H5Pget_userblock(fcpl.get(), &userblock) >= 0 && userblock == 0;
  const haddr_t offset = H5Dget_offset(made.get());
  H5Eclear2(H5E_DEFAULT);
  if (plain && contiguous && !empty && offset != HADDR_UNDEF && direct_io_enabled() &&
      (converts(w.stored, w.dtype) || H5Tequal(file_type, native_type(w.dtype)) > 0))
    // Fenced by the journal: made before anything was written, removed by the commit or the rollback.
    w.direct = {w.target.file, static_cast<std::int64_t>(offset),
                w.rows,        w.cols,
                w.esize(),     fence_of(w.journal->journal(), journal_format::kStampAt),
                w.dtype,       w.stored};
  const std::string failed = "writing " + in_quotes(w.target.file) + " failed";
  out.close(made, failed);
  out.close(failed);
  if (contiguous && offset != HADDR_UNDEF && !empty)
    reserve_elements(static_cast<std::uint64_t>(offset),
                     static_cast<std::uint64_t>(w.rows) * static_cast<std::uint64_t>(w.cols) * w.esize());
}

// A window of an existing dataset (the target names one): its place found and the dataset checked
// before anything is written; every write then goes through the journal, so that an error, a
// signal or a kill puts back the values the window held.
void MatrixWriter::Impl::open_window_in_existing_file() {
  Impl& w = *this;
  const std::string named = in_quotes(w.target);
  if (!w.overwrite)
    throw InputError("output " + named +
                     " is a window of an existing dataset: the result replaces the values there; "
                     "pass --overwrite");
  // Read-only first (no lock held: inspect takes HDF5's own): the window resolved in the dataset.
  DatasetInfo info;
  try {
    info = inspect(w.target);
  } catch (const InputError& e) {
    throw InputError("output " + named + " (a window of an existing dataset): " + e.what());
  }
  const bool complex_c = is_complex(w.dtype);
  const bool takes = complex_c ? info.stored_type == "complex64" || info.stored_type == "complex128"
                               : !info.is_integer && (info.stored_type == "float32" || info.stored_type == "float64");
  if (!takes)
    throw InputError("output " + named + " is a window of a dataset of " + info.stored_type + ": tessera writes a " +
                     (complex_c ? "complex C into complex64 or complex128" : "real C into float32 or float64") +
                     " datasets only");
  if (info.stacked())
    throw InputError("output " + named + " is a whole 3-D dataset with a window: name one matrix of it, e.g. [0, ...]");
  if (info.rows != w.rows || info.cols != w.cols)
    throw InputError("output " + named + " is a " + shape_text(info.rows, info.cols) + " window, but C is " +
                     shape_text(w.rows, w.cols) + " (M x N of op(A) op(B))");
  w.window = true;
  w.window_row0 = info.row0;
  w.window_col0 = info.col0;
  w.window_index = info.index;
  const std::lock_guard<std::mutex> hold(hdf5::lock());
  check_existing_output(w.target, w.overwrite);  // links on the way, external and soft ones refused
  w.journal = std::make_unique<RollbackJournal>(w.target.file);
  const RollbackJournal::HoldSignals held;
  JournaledWrite out(w.target.file, *w.journal);
  w.notes = remove_dead_leftovers(out.get(), w.target.file);
  // Written by HDF5 on rank 0, through the journal's driver, which records what the run wrote
  // beside the old bytes: the window shares its pages with elements the run does not write, and a
  // recovery after a crash must tell an edit of those from the run's own writes (no pwrite range
  // is reserved here, whose restore would paste the old bytes over such an edit).
  Handle opened = own_dataset(H5Dopen2(out.get(), w.target.path.c_str(), H5P_DEFAULT));
  if (!opened.valid()) throw_io("cannot open " + named + " to write C into it");
  const std::string failed = "writing " + in_quotes(w.target.file) + " failed";
  out.close(opened, failed);
  out.close(failed);
  w.dataset_created = true;  // (the window's: what the commit and the rollback look for)
}

// The elements' space taken on the disk now (the ranks write there without HDF5 and the journal),
// so a disk without room for C is found before the compute, not in the middle of the write. Where
// HDF5 placed them over bytes the file already held (it may reuse freed space), those bytes are
// saved in the journal first.
void MatrixWriter::Impl::reserve_elements(std::uint64_t offset, std::uint64_t bytes) {
  journal->reserve(offset, bytes);
  struct statvfs vfs {};
  if (::fstatvfs(journal->fd(), &vfs) == 0) {
    const double free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
    const double needed = static_cast<double>(bytes) + (1 << 20);  // and room for the commit's metadata
    if (free_bytes < needed)
      throw IoError("not enough space for the result in " + in_quotes(target.file) + ": it needs " +
                    std::to_string(static_cast<long long>(needed / 1048576)) + " MiB, the file system has " +
                    std::to_string(static_cast<long long>(free_bytes / 1048576)) + " MiB free");
  }
  int rc = test_write_point();
  if (rc == 0) rc = ::posix_fallocate(journal->fd(), static_cast<off_t>(offset), static_cast<off_t>(bytes));
  if (rc == ENOSPC)
    throw IoError("not enough space for the result in " + in_quotes(target.file) + " (" + std::to_string(bytes) +
                  " bytes): " + std::strerror(rc));
  // Other failures (a file system without fallocate) leave the space to be taken as it is written.
  if (::fsync(journal->fd()) != 0)  // the new link and the space on disk before the ranks write there
    throw IoError("writing " + in_quotes(target.file) + " failed: " + std::strerror(errno));
}

// The commit into an existing file: reopened, the attributes written, the dataset that
// --overwrite replaces unlinked and the temporary moved to PATH (groups created as needed), then
// flushed and closed; the journal's commit makes it durable and final. HDF5 has no transactions,
// the journal gives it one: a process killed inside these metadata writes leaves the file as it
// was before the run once the journal is rolled back. Signals wait for the commit's end.
void MatrixWriter::Impl::commit_in_file() {
  Impl& w = *this;
  if (!w.dataset_created) throw IoError("cannot commit " + in_quotes(w.target) + ": an earlier commit failed");
  w.close_direct();
  const RollbackJournal::HoldSignals held;
  if (w.window) {  // written where it lies: the journal's commit makes it durable and final
    w.journal->commit();
    w.dataset_created = false;
    w.committed = true;
    return;
  }
  {
    const std::lock_guard<std::mutex> hold(hdf5::lock());
    test_wait_in_commit();
    JournaledWrite out(w.target.file, *w.journal);
    {
      Handle made = own_dataset(H5Dopen2(out.get(), w.temp_dataset.c_str(), H5P_DEFAULT));
      if (!made.valid()) throw_io("cannot open " + w.where() + " to commit it");
      for (const auto& a : w.attributes) write_attribute(made.get(), a, w.where());
      out.close(made, "writing the attributes of " + w.where() + " failed");
    }
    const htri_t exists = H5Lexists(out.get(), w.target.path.c_str(), H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);  // (a missing group on the way is an error to H5Lexists)
    if (exists > 0) {
      if (!w.overwrite)
        throw InputError("output dataset " + in_quotes(w.target) +
                         " appeared while tessera was running; pass --overwrite to replace it");
      check_dataset_target(out.get(), w.target, true);  // still a dataset, reached within the file
      if (H5Ldelete(out.get(), w.target.path.c_str(), H5P_DEFAULT) < 0)
        throw_io("cannot replace " + in_quotes(w.target));
    }
    Handle lcpl = own_plist(H5Pcreate(H5P_LINK_CREATE));
    if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0 ||
        H5Lmove(out.get(), w.temp_dataset.c_str(), out.get(), w.target.path.c_str(), lcpl.get(), H5P_DEFAULT) < 0)
      throw_io("cannot move " + w.where() + " to " + in_quotes(w.target));
    log::debug("moved " + w.temp_dataset + " to " + w.target.path + " in " + in_quotes(w.target.file));
    out.close("writing " + in_quotes(w.target.file) + " failed while closing it");
  }
  w.journal->commit();  // fsync, then the journal removed: C is there for good
  w.dataset_created = false;
  w.committed = true;
}

}  // namespace tessera::io
