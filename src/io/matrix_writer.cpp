// The writer of a result: a new file under a temporary name, or a temporary dataset in an existing
// file (io/dataset_in_file.hpp); the dataset's space allocated early so blocks can be written in
// place (by this process or others), attributes, and the commit (flush, fsync, then rename or link
// the file, or move the dataset's link) that alone makes the result appear.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cleanup.hpp"
#include "io/dataset_in_file.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_attributes.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_library.hpp"
#include "io/journal.hpp"
#include "io/journal_driver.hpp"
#include "io/nonfinite.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

using namespace hdf5;

struct MatrixWriter::Impl {
  DatasetRef target;
  std::string temp_path;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::f64;
  bool overwrite = false;
  bool created = false;  // the temporary file is ours: remove it unless committed
  bool committed = false;
  // Into an existing file: the temporary dataset (a root-group link) made there; the file stays
  // closed between the constructor and the commit (and each block HDF5 writes), and the
  // attributes wait for the commit. Every change HDF5 makes to the file goes through `journal`
  // (io/journal.hpp), which undoes them all unless the commit ends: the file is then byte for
  // byte as it was, whatever stopped the run (an error, a signal, a kill, a full disk).
  bool in_file = false;
  std::string temp_dataset;
  bool dataset_created = false;
  std::vector<Attribute> attributes;
  std::unique_ptr<RollbackJournal> journal;  // declared before the handles: outlives them
  std::vector<std::string> notes;            // leftovers of earlier runs removed, for the user
  Handle file;                               // declared before dataset: closed after it
  Handle dataset;
  // Contiguous datasets are written with pwrite at their offset in the file (see write_block);
  // invalid where HDF5 writes (chunked or compressed output).
  DirectTarget direct;
  std::unique_ptr<BlockFile> direct_file;
  // NaN and Inf among the elements HDF5 wrote so far (write_block may run on another thread);
  // direct_file counts its own.
  NonfiniteCount nonfinite;
  mutable std::mutex nonfinite_lock;

  std::string where() const {
    return in_file ? in_quotes(target.file + ":" + temp_dataset) : in_quotes(temp_path + ":" + target.path);
  }
  void close_direct() {
    if (!direct_file) return;
    const std::lock_guard<std::mutex> hold(nonfinite_lock);
    nonfinite.merge(direct_file->nonfinite_written());
    direct_file.reset();
  }

  void create_in_existing_file(hid_t dcpl, const hsize_t dims[2]);
  void reserve_elements(std::uint64_t offset);
  void commit_in_file();

  // The existing file as it was before the run (an error, or an exception): the journal puts
  // back every byte HDF5 changed and cuts the file to its old size. Should that fail, the
  // journal stays and the next tessera command touching the file restores it.
  void roll_back_existing_file() {
    (void)dataset.close();
    (void)file.close();
    H5Eclear2(H5E_DEFAULT);
    journal.reset();
  }

  // Runs also when the writer's constructor throws after creating the temporary file.
  ~Impl() {
    close_direct();
    if (committed) return;
    if (in_file) {
      roll_back_existing_file();
      return;
    }
    // Closing flushes HDF5's caches. If that flush fails (full disk, quota), HDF5 1.10 frees the
    // file but keeps its id, and the library crashes at exit (HDFFV-11052). The file is being
    // discarded anyway, so empty it first: that returns the space the final flush needs.
    if (created && (file.valid() || dataset.valid()) && ::truncate(temp_path.c_str(), 0) != 0) {
      // nothing more to do: the file is unlinked below either way
    }
    (void)dataset.close();
    (void)file.close();
    H5Eclear2(H5E_DEFAULT);
    if (created) (void)::unlink(temp_path.c_str());
    if (created) forget_temporary(temp_path);
  }
};

// The temporary dataset in the existing output file, contiguous with its space allocated now (so
// the ranks can pwrite their rows at its offset), then the file closed again: while the job
// computes, HDF5 holds nothing of it open, so a run that dies leaves a valid file.
void MatrixWriter::Impl::create_in_existing_file(hid_t dcpl, const hsize_t dims[2]) {
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
  if (H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0)
    throw_io(what);
  const bool empty = dims[0] == 0 || dims[1] == 0;
  Handle space = own_space(H5Screate_simple(2, dims, nullptr));
  if (!space.valid()) throw_io(what);
  const hid_t file_type = w.dtype == DType::f32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
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
  if (plain && !empty && offset != HADDR_UNDEF && direct_io_enabled() && H5Tequal(file_type, native_type(w.dtype)) > 0)
    w.direct = {w.target.file, static_cast<std::int64_t>(offset), w.rows, w.cols, dtype_size(w.dtype)};
  const std::string failed = "writing " + in_quotes(w.target.file) + " failed";
  out.close(made, failed);
  out.close(failed);
  if (offset != HADDR_UNDEF && !empty) reserve_elements(static_cast<std::uint64_t>(offset));
}

// The elements' space taken on the disk now (the ranks write there without HDF5 and the journal),
// so a disk without room for C is found before the compute, not in the middle of the write. Where
// HDF5 placed them over bytes the file already held (it may reuse freed space), those bytes are
// saved in the journal first.
void MatrixWriter::Impl::reserve_elements(std::uint64_t offset) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * dtype_size(dtype);
  journal->preserve(offset, bytes);
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

MatrixWriter::MatrixWriter(const DatasetRef& target, std::int64_t rows, std::int64_t cols, DType dtype,
                           const WriteOptions& opts)
    : impl_(std::make_unique<Impl>()) {
  ensure_init();
  Impl& w = *impl_;
  w.target = target;
  w.rows = rows;
  w.cols = cols;
  w.dtype = dtype;
  w.overwrite = opts.overwrite;

  if (target.file.empty() || target.path.size() < 2 || target.path.front() != '/' || target.path.back() == '/')
    throw InputError("invalid output dataset " + in_quotes(target) + ": expected FILE:/PATH, e.g. c.h5:/C");
  if (rows < 0 || cols < 0)
    throw InputError("invalid output shape " + shape_text(rows, cols) + " for " + in_quotes(target));
  if (opts.gzip_level < 0 || opts.gzip_level > 9)
    throw InputError("gzip level " + std::to_string(opts.gzip_level) + " is out of range 0..9");

  // Fail before any compute: target and directory.
  struct stat st {};
  const bool exists = ::stat(target.file.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw InputError("output file " + in_quotes(target.file) + " is a directory");
  w.in_file = exists && opts.existing_file == ExistingFile::add_dataset;
  if (exists && !w.in_file && !opts.overwrite)
    throw InputError("output file " + in_quotes(target.file) + " exists; pass --overwrite to replace it");
  if (!w.in_file) {
    std::string dir = std::filesystem::path(target.file).parent_path().string();
    if (dir.empty()) dir = ".";
    if (::stat(dir.c_str(), &st) != 0) throw InputError("output directory " + in_quotes(dir) + " does not exist");
    if (!S_ISDIR(st.st_mode)) throw InputError("output directory " + in_quotes(dir) + " is not a directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw InputError("output directory " + in_quotes(dir) + " is not writable");
  }

  // Storage: contiguous unless chunking or compression was asked for.
  const hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  Handle dcpl = own_plist(H5Pcreate(H5P_DATASET_CREATE));
  if (!dcpl.valid()) throw_io("cannot set up HDF5 to write " + in_quotes(target));
  // Lets read_attributes list attributes in the order they were written.
  if (H5Pset_attr_creation_order(dcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  const bool want_chunks = !opts.chunk.empty() || opts.gzip_level > 0;
  // A dataset with a zero dimension has nothing to chunk or compress.
  if (want_chunks && rows > 0 && cols > 0) {
    std::int64_t chunk_rows = std::min<std::int64_t>(rows, 256);
    std::int64_t chunk_cols = std::min<std::int64_t>(cols, 256);
    if (!opts.chunk.empty()) {
      if (opts.chunk.size() != 2 || opts.chunk[0] < 1 || opts.chunk[1] < 1)
        throw InputError("invalid chunk shape for " + in_quotes(target) + ": expected two positive sizes");
      // Larger than the matrix only means "whole extent"; HDF5 wants chunk <= dims.
      chunk_rows = std::min(opts.chunk[0], rows);
      chunk_cols = std::min(opts.chunk[1], cols);
    }
    const auto chunk_bytes =
        static_cast<double>(chunk_rows) * static_cast<double>(chunk_cols) * static_cast<double>(dtype_size(dtype));
    if (chunk_bytes >= 4294967296.0)
      throw InputError("chunk " + shape_text(chunk_rows, chunk_cols) + " for " + in_quotes(target) +
                       " is too large: HDF5 limits a chunk to 4 GiB");
    const hsize_t chunk[2] = {static_cast<hsize_t>(chunk_rows), static_cast<hsize_t>(chunk_cols)};
    if (H5Pset_chunk(dcpl.get(), 2, chunk) < 0) throw_io("cannot set the chunk shape of " + in_quotes(target));
    if (opts.gzip_level > 0) {
      if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
        throw InputError("gzip compression is not available in this HDF5 library; use --gzip 0");
      if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(opts.gzip_level)) < 0)
        throw_io("cannot set up gzip compression for " + in_quotes(target));
    }
  }

  if (w.in_file) {
    if (want_chunks)
      throw InputError("chunked or compressed output into the existing file " + in_quotes(target.file) +
                       " is not supported: write it into a new file");
    w.create_in_existing_file(dcpl.get(), dims);
    if (w.direct.valid()) w.direct_file = std::make_unique<BlockFile>(w.direct);
    log::info("the result goes into the existing file " + in_quotes(target.file) + " as " + target.path +
              ", written as " + w.temp_dataset + " until complete" +
              (w.direct.valid() ? " (its elements at byte " + std::to_string(w.direct.base) + ")" : " (by HDF5)"));
    return;
  }

  w.temp_path = temporary_name(target.file);
  if (::stat(w.temp_path.c_str(), &st) == 0)
    throw IoError("cannot create temporary file " + in_quotes(w.temp_path) +
                  ": it already exists (left by an earlier run?); remove it");
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  // STRONG: closing the file closes every object in it, so commit's H5Fclose really flushes and
  // releases the file (and reports a failed flush) instead of deferring until the last handle.
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  w.file = own_file(H5Fcreate(w.temp_path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
  if (!w.file.valid()) throw_io("cannot create temporary file " + in_quotes(w.temp_path));
  w.created = true;
  register_temporary(w.temp_path);  // removed on SIGTERM / SIGINT too
  log::info("the result goes into the new file " + in_quotes(target.file) + ", written as " + in_quotes(w.temp_path) +
            " until complete");

  Handle lcpl = own_plist(H5Pcreate(H5P_LINK_CREATE));
  if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  Handle space = own_space(H5Screate_simple(2, dims, nullptr));
  if (!space.valid()) throw_io("cannot create the dataspace of " + w.where());
  const hid_t file_type = dtype == DType::f32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
  // Contiguous output whose file type is the native one: its space is allocated now and never
  // filled (every element is written), so write_block can pwrite the blocks straight into it.
  const bool direct =
      !want_chunks && rows > 0 && cols > 0 && H5Tequal(file_type, native_type(dtype)) > 0 && direct_io_enabled();
  if (direct && (H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY) < 0 ||
                 H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0))
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  w.dataset = own_dataset(
      H5Dcreate2(w.file.get(), target.path.c_str(), file_type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT));
  if (!w.dataset.valid()) throw_io("cannot create dataset " + w.where());
  if (direct) {
    const haddr_t offset = H5Dget_offset(w.dataset.get());
    H5Eclear2(H5E_DEFAULT);
    if (offset != HADDR_UNDEF) {
      w.direct = {w.temp_path, static_cast<std::int64_t>(offset), rows, cols, dtype_size(dtype)};
      w.direct_file = std::make_unique<BlockFile>(w.direct);
    }
  }
}

MatrixWriter::~MatrixWriter() = default;  // Impl's destructor removes an uncommitted file

void MatrixWriter::write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                               const void* data) {
  Impl& w = *impl_;
  if (w.committed || (!w.dataset.valid() && !w.in_file))
    throw IoError("cannot write to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (!in_range(row0, nrows, w.rows) || !in_range(col0, ncols, w.cols))
    throw InputError(block_text(row0, nrows, col0, ncols) + " is outside " + in_quotes(w.target) + " (" +
                     shape_text(w.rows, w.cols) + ")");
  if (nrows == 0 || ncols == 0) return;
  if (data == nullptr) throw std::invalid_argument("write_block: null data");
  if (w.direct_file) {
    w.direct_file->write_block(row0, col0, nrows, ncols, data);
    return;
  }
  {
    const NonfiniteCount seen = count_nonfinite(data, w.dtype, nrows, ncols, row0, col0, w.cols);
    const std::lock_guard<std::mutex> hold(w.nonfinite_lock);
    w.nonfinite.merge(seen);
  }
  const std::lock_guard<std::mutex> hold(hdf5::lock());
  ensure_init();
  // Into an existing file, HDF5 has it open only while it writes this block: its space was
  // allocated when it was made, so the write changes raw data alone, no metadata.
  const std::string failed = "writing " + block_text(row0, nrows, col0, ncols) + " to " + w.where() + " failed";
  std::optional<RollbackJournal::HoldSignals> held;
  std::optional<JournaledWrite> file;
  Handle opened;
  if (w.in_file) {
    held.emplace();
    file.emplace(w.target.file, *w.journal);
    opened = own_dataset(H5Dopen2(file->get(), w.temp_dataset.c_str(), H5P_DEFAULT));
    if (!opened.valid()) throw_io("cannot open " + w.where() + " to write C");
  }
  const hid_t dataset = w.in_file ? opened.get() : w.dataset.get();
  auto [file_space, mem_space] = block_spaces(dataset, row0, nrows, col0, ncols);
  if (!file_space.valid()) throw_io("cannot select " + block_text(row0, nrows, col0, ncols) + " of " + w.where());
  if (H5Dwrite(dataset, native_type(w.dtype), mem_space.get(), file_space.get(), H5P_DEFAULT, data) < 0)
    throw_io(failed);
  if (w.in_file) {
    file->close(opened, failed);
    file->close(failed);
  }
}

void MatrixWriter::set_attributes(const std::vector<Attribute>& attrs) {
  Impl& w = *impl_;
  if (w.committed || (!w.dataset.valid() && !w.in_file))
    throw IoError("cannot write attributes to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (w.in_file) {  // written at the commit, when the file is open again
    for (const auto& a : attrs) {
      if (a.name.empty()) throw InputError("attribute names must not be empty (writing " + w.where() + ")");
      // Replaced as HDF5 replaces one: deleted, then written last.
      w.attributes.erase(std::remove_if(w.attributes.begin(), w.attributes.end(),
                                        [&](const Attribute& b) { return b.name == a.name; }),
                         w.attributes.end());
      w.attributes.push_back(a);
    }
    return;
  }
  for (const auto& a : attrs) write_attribute(w.dataset.get(), a, w.where());
}

void MatrixWriter::commit() {
  Impl& w = *impl_;
  if (w.committed) return;
  test_pause_before_commit();
  if (w.in_file) {
    w.commit_in_file();
    return;
  }
  if (!w.file.valid()) throw IoError("cannot commit " + in_quotes(w.target) + ": an earlier commit failed");

  w.close_direct();  // the blocks written with pwrite are in the file; fsync below makes them durable
  // HDF5 writes most metadata (and cached chunks) only now; a full disk shows up here. Flush
  // explicitly before closing: a failed flush leaves the handles intact for the destructor, while
  // a failed close would leave HDF5 1.10 with a dangling id that crashes it at exit.
  if (H5Dflush(w.dataset.get()) < 0 || H5Fflush(w.file.get(), H5F_SCOPE_LOCAL) < 0)
    throw_io("writing " + in_quotes(w.temp_path) + " failed");
  const herr_t dataset_closed = w.dataset.close();
  const herr_t file_closed = w.file.close();
  if (dataset_closed < 0 || file_closed < 0)
    throw_io("writing " + in_quotes(w.temp_path) + " failed while closing it (disk full?)");

  // Network file systems may report write errors only on fsync; and the data must be on disk
  // before the rename makes the file look complete.
  const int fd = ::open(w.temp_path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw IoError("writing " + in_quotes(w.temp_path) + " failed: " + std::strerror(err));
  }
  ::close(fd);
  log::debug("C is on disk in " + in_quotes(w.temp_path) + "; renaming it to " + in_quotes(w.target.file));

  const std::string what = "cannot rename " + in_quotes(w.temp_path) + " to " + in_quotes(w.target.file);
  const auto appeared = [&] {
    return InputError("output file " + in_quotes(w.target.file) +
                      " appeared while tessera was running; pass --overwrite to replace it");
  };
  if (!w.overwrite) {
    // link() fails if the target exists, so no file that appeared meanwhile is clobbered; some
    // file systems have no hard links, and there the check-then-rename below has to do.
    if (::link(w.temp_path.c_str(), w.target.file.c_str()) == 0) {
      w.committed = true;
      (void)::unlink(w.temp_path.c_str());
      forget_temporary(w.temp_path);
      return;
    }
    if (errno == EEXIST) throw appeared();
    struct stat st {};
    if (::stat(w.target.file.c_str(), &st) == 0) throw appeared();
  }
  if (std::rename(w.temp_path.c_str(), w.target.file.c_str()) != 0) throw IoError(what + ": " + std::strerror(errno));
  w.committed = true;
  forget_temporary(w.temp_path);
}

const std::string& MatrixWriter::temporary_path() const { return impl_->temp_path; }

const std::vector<std::string>& MatrixWriter::notes() const { return impl_->notes; }

DirectTarget MatrixWriter::direct_target() const { return impl_->direct; }

NonfiniteCount MatrixWriter::nonfinite_written() const {
  const std::lock_guard<std::mutex> hold(impl_->nonfinite_lock);
  NonfiniteCount all = impl_->nonfinite;
  if (impl_->direct_file) all.merge(impl_->direct_file->nonfinite_written());
  return all;
}

}  // namespace tessera::io
