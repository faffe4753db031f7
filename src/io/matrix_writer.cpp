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
#include "core/file_kind.hpp"
#include "core/log.hpp"
#include "io/chunked_write.hpp"
#include "io/cleanup.hpp"
#include "io/dataset_in_file.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_attributes.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_library.hpp"
#include "io/journal.hpp"
#include "io/journal_driver.hpp"
#include "io/matrix_writer_impl.hpp"
#include "io/nonfinite.hpp"
#include "io/test_hooks.hpp"
#include "io/zstd_filter.hpp"

namespace tessera::io {

using namespace hdf5;

namespace {

bool wants_chunks(const WriteOptions& opts) {
  return !opts.chunk.empty() || opts.gzip_level > 0 || opts.plugin_filter > 0 || opts.shuffle;
}

constexpr int kLz4Filter = 32004, kZstdFilter = 32015;

// The level the filter writes at: zstd's (hdf5plugin's default 3 where none was asked for); 1
// for the others, which have none (LZ4's acceleration 1).
int plugin_level(const WriteOptions& opts) {
  if (opts.plugin_filter == kZstdFilter) return opts.plugin_level > 0 ? opts.plugin_level : kZstdDefaultLevel;
  return 1;
}

// The compression tessera's threads do themselves (io/chunked_write.hpp) for a new rows x cols
// dataset written with `opts`: gzip always, LZ4 and zstd where this build has their libraries; none
// for a batch's 3-D C, an empty one, or under TESSERA_HDF5_DIRECT=0 (every byte left to HDF5).
std::optional<Codec> own_codec(std::int64_t rows, std::int64_t cols, const WriteOptions& opts) {
  if (opts.matrices > 0 || rows < 1 || cols < 1 || !direct_io_enabled()) return std::nullopt;
  if (opts.gzip_level > 0 && opts.plugin_filter == 0) return Codec::deflate;
  if (opts.plugin_filter == kLz4Filter && codec_built(Codec::lz4)) return Codec::lz4;
  if (opts.plugin_filter == kZstdFilter && codec_built(Codec::zstd)) return Codec::zstd;
  return std::nullopt;
}

// The new dataset's creation properties: attributes in creation order; chunks (--chunk, else up
// to 256 x 256) and the compression where asked for and the matrix has elements.
Handle creation_properties(const DatasetRef& target, std::int64_t rows, std::int64_t cols, DType dtype,
                           const WriteOptions& opts, std::optional<Codec> own) {
  Handle dcpl = own_plist(H5Pcreate(H5P_DATASET_CREATE));
  if (!dcpl.valid()) throw_io("cannot set up HDF5 to write " + in_quotes(target));
  // Lets read_attributes list attributes in the order they were written.
  if (H5Pset_attr_creation_order(dcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  const bool want_chunks = wants_chunks(opts);
  // A dataset with a zero dimension has nothing to chunk or compress.
  if (!want_chunks || rows == 0 || cols == 0) return dcpl;
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
  // The pipeline in h5py's order: shuffle, then the compression.
  if (opts.shuffle && H5Pset_shuffle(dcpl.get()) < 0) throw_io("cannot set up shuffle for " + in_quotes(target));
  if (opts.gzip_level > 0) {
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
      throw InputError("gzip compression is not available in this HDF5 library; use --gzip 0");
    if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(opts.gzip_level)) < 0)
      throw_io("cannot set up gzip compression for " + in_quotes(target));
  }
  if (opts.plugin_filter > 0 && own) {
    // tessera writes the filter's bytes itself: HDF5 only records the filter in the pipeline, as
    // h5py does for a filter it names by number (optional: creating the dataset needs no plugin;
    // other readers need the filter, hdf5plugin's or Debian's plugin, tessera its own).
    const unsigned level = static_cast<unsigned>(plugin_level(opts));  // zstd's, recorded as hdf5plugin does
    if (H5Pset_filter(dcpl.get(), static_cast<H5Z_filter_t>(opts.plugin_filter), H5Z_FLAG_OPTIONAL,
                      opts.plugin_filter == kZstdFilter ? 1 : 0, &level) < 0)
      throw_io("cannot set up the compression filter " + std::to_string(opts.plugin_filter) + " for " +
               in_quotes(target));
    if (*own == Codec::lz4 && chunk_bytes >= 2147483648.0)
      throw InputError("chunk " + shape_text(chunk_rows, chunk_cols) + " for " + in_quotes(target) +
                       " is too large for LZ4: its HDF5 filter takes chunks under 2 GiB");
  } else if (opts.plugin_filter > 0) {
    if (H5Zfilter_avail(static_cast<H5Z_filter_t>(opts.plugin_filter)) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError("the compression filter " + std::to_string(opts.plugin_filter) + " for " + in_quotes(target) +
                       " is not available: HDF5 found no plugin for it and this build of tessera has no "
                       "library for it (scripts/setup.sh installs Debian's hdf5-filter-plugin, liblz4-dev "
                       "and libzstd-dev; or set HDF5_PLUGIN_PATH)");
    }
    const unsigned level = static_cast<unsigned>(plugin_level(opts));
    if (H5Pset_filter(dcpl.get(), static_cast<H5Z_filter_t>(opts.plugin_filter), H5Z_FLAG_MANDATORY,
                      opts.plugin_filter == kZstdFilter ? 1 : 0, &level) < 0)
      throw_io("cannot set up the compression filter " + std::to_string(opts.plugin_filter) + " for " +
               in_quotes(target));
  }
  return dcpl;
}

}  // namespace

int compression_threads(const std::string& compression, int threads) {
  const bool own = compression == "gzip" || (compression == "lz4" && codec_built(Codec::lz4)) ||
                   (compression == "zstd" && codec_built(Codec::zstd));
  return own ? std::max(1, threads) : 1;
}

int filter_plugin_id(const std::string& name) {
  if (name == "lz4") return kLz4Filter;
  if (name == "zstd") return kZstdFilter;
  if (name == "bzip2") return 307;
  return 0;
}

namespace {

// C's chunks compressed by tessera's threads (io/chunked_write.hpp): a new 2-D dataset whose
// pipeline is [shuffle,] gzip, LZ4 or zstd (own_codec), unless TESSERA_HDF5_DIRECT=0 leaves every
// byte to HDF5.
std::unique_ptr<ChunkedWriter> chunked_writer(hid_t dcpl, std::int64_t rows, std::int64_t cols, DType dtype,
                                              const WriteOptions& opts, std::optional<Codec> own) {
  if (!own) return nullptr;
  hsize_t chunk[2] = {0, 0};
  if (H5Pget_chunk(dcpl, 2, chunk) != 2) return nullptr;
  return std::make_unique<ChunkedWriter>(rows, cols, static_cast<std::int64_t>(chunk[0]),
                                         static_cast<std::int64_t>(chunk[1]), stored_size(opts.stored, dtype),
                                         opts.shuffle, *own == Codec::deflate ? opts.gzip_level : plugin_level(opts),
                                         *own);
}

}  // namespace

Handle create_temporary_file(const std::string& temp_path, const DatasetRef& target) {
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  // STRONG: closing the file closes every object in it, so commit's H5Fclose really flushes and
  // releases the file (and reports a failed flush) instead of deferring until the last handle.
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  Handle file = own_file(H5Fcreate(temp_path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
  if (!file.valid()) throw_io("cannot create temporary file " + in_quotes(temp_path));
  return file;
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
  w.stored = opts.stored;
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
  if (const std::string kind = exists ? not_regular_file(st) : ""; !kind.empty())
    throw InputError("output file " + in_quotes(target.file) + " is " + kind + ", not a regular file");
  w.in_file = exists && opts.existing_file == ExistingFile::add_dataset;
  if (target.slice) {  // a window (or one matrix) of an existing dataset, written in place
    const std::string named = in_quotes(target);
    if (!exists)
      throw InputError("output " + named + " names a window of a dataset, but " + in_quotes(target.file) +
                       " does not exist: a window of C goes into an existing dataset");
    if (!w.in_file) throw InputError("output " + named + ": a window of C cannot go into a file this run replaces");
    if (opts.matrices > 0)
      throw InputError("output " + named + ": a batch's C is written as a whole 3-D dataset, not into a window");
    if (wants_chunks(opts))  // --chunk, --compression (any), --shuffle
      throw InputError("output " + named +
                       ": chunks and compression are the existing dataset's own; a window of "
                       "it takes no --chunk, --compression or --shuffle");
    if (opts.stored != Stored::same)
      throw InputError("output " + named + ": a window of C is stored in its dataset's own type; it takes no " +
                       "--c-dtype (" + stored_word(opts.stored) + ")");
    if (rows < 0 || cols < 0) throw InputError("invalid output shape " + shape_text(rows, cols) + " for " + named);
    w.open_window_in_existing_file();
    log::info("the result goes into " + named + ", in place, its old values kept in the journal until the commit");
    return;
  }
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

  // Storage: contiguous unless chunking or compression was asked for. A batch (opts.matrices): 3-D,
  // the stack of its matrices written as the rows x cols matrix it is.
  const bool want_chunks = wants_chunks(opts);
  std::vector<hsize_t> dims{static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  if (opts.matrices > 0) {
    if (want_chunks)
      throw InputError("output " + in_quotes(target) +
                       ": a batch's C (a 3-D dataset) is written contiguous; "
                       "--chunk and --compression are for a 2-D C");
    if (rows % opts.matrices != 0)
      throw std::invalid_argument("MatrixWriter: a batch of " + std::to_string(opts.matrices) +
                                  " matrices needs rows (" + std::to_string(rows) + ") in whole matrices");
    w.stacked_rows = rows / opts.matrices;
    dims = {static_cast<hsize_t>(opts.matrices), static_cast<hsize_t>(w.stacked_rows), static_cast<hsize_t>(cols)};
  }
  const std::optional<Codec> own = own_codec(rows, cols, opts);
  Handle dcpl = creation_properties(target, rows, cols, dtype, opts, own);

  w.chunked = chunked_writer(dcpl.get(), rows, cols, dtype, opts, own);
  if (w.in_file) {
    w.create_in_existing_file(dcpl.get(), dims);
    if (w.direct.valid()) w.direct_file = std::make_unique<BlockFile>(w.direct);
    log::info("the result goes into the existing file " + in_quotes(target.file) + " as " + target.path +
              ", written as " + w.temp_dataset + " until complete" +
              (w.direct.valid() ? " (its elements at byte " + std::to_string(w.direct.base) + ")" : " (by HDF5)"));
    return;
  }

  if (opts.batch != nullptr) {
    w.join_batch(*opts.batch, dcpl.get(), dims, want_chunks);
    return;
  }
  w.temp_path = temporary_name(target.file);
  if (::stat(w.temp_path.c_str(), &st) == 0)
    throw IoError("cannot create temporary file " + in_quotes(w.temp_path) +
                  ": it already exists (left by an earlier run?); remove it");
  w.file = create_temporary_file(w.temp_path, target);
  w.created = true;
  register_temporary(w.temp_path);  // removed on SIGTERM / SIGINT too
  log::info("the result goes into the new file " + in_quotes(target.file) + ", written as " + in_quotes(w.temp_path) +
            " until complete");
  w.create_dataset(w.file.get(), dcpl.get(), dims, want_chunks);
}

void MatrixWriter::Impl::create_dataset(hid_t in, hid_t dcpl, const std::vector<hsize_t>& dims, bool want_chunks) {
  Handle lcpl = own_plist(H5Pcreate(H5P_LINK_CREATE));
  if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  Handle space = own_space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  if (!space.valid()) throw_io("cannot create the dataspace of " + where());
  const Handle type = own_type(stored_file_type(stored, dtype));
  if (!type.valid()) throw_io("cannot describe C's stored type " + stored_name(stored, dtype));
  const hid_t file_type = type.get();
  // Contiguous output whose file type is the native one (or the little-endian 16-bit float the
  // blocks are converted to): its space is allocated now and never filled (every element is
  // written), so write_block can pwrite the blocks straight into it.
  const bool native = converts(stored, dtype) || H5Tequal(file_type, native_type(dtype)) > 0;
  const bool direct_io = !want_chunks && rows > 0 && cols > 0 && native && direct_io_enabled();
  if (direct_io &&
      (H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0))
    throw_io("cannot set up HDF5 to write " + in_quotes(target));
  dataset = own_dataset(H5Dcreate2(in, target.path.c_str(), file_type, space.get(), lcpl.get(), dcpl, H5P_DEFAULT));
  if (!dataset.valid()) throw_io("cannot create dataset " + where());
  if (!direct_io) return;
  const haddr_t offset = H5Dget_offset(dataset.get());
  H5Eclear2(H5E_DEFAULT);
  if (offset == HADDR_UNDEF) return;
  // Fenced by the temporary file itself: renamed by the commit, removed by a rollback.
  direct = {temp_path, static_cast<std::int64_t>(offset), rows, cols, esize(), fence_of(temp_path), dtype, stored};
  direct_file = std::make_unique<BlockFile>(direct);
}

MatrixWriter::~MatrixWriter() = default;  // Impl's destructor removes an uncommitted file

void MatrixWriter::write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                               const void* data) {
  write_block(row0, col0, nrows, ncols, data, {});
}

std::optional<ChunkLayout> MatrixWriter::chunk_layout() const {
  // The other ranks' blocks are compressed as they are computed: not where C is stored otherwise.
  if (!impl_->chunked || converts(impl_->stored, impl_->dtype)) return std::nullopt;
  return impl_->chunked->layout();
}

void MatrixWriter::write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                               const void* data, const std::vector<CompressedChunk>& ready) {
  Impl& w = *impl_;
  if (!takes_block(row0, col0, nrows, ncols, data, "write_block")) return;
  if (w.direct_file) {
    w.direct_file->write_block(row0, col0, nrows, ncols, data);
    return;
  }
  // The block as stored (--c-dtype), converted here where that is not as computed; the values the
  // conversion made Inf counted with the product's own NaN and Inf.
  std::unique_ptr<unsigned char[]> stored;  // uninitialized: convert_block writes every byte
  {
    NonfiniteCount seen = count_nonfinite(data, w.dtype, nrows, ncols, row0, col0, w.cols);
    if (converts(w.stored, w.dtype)) {
      stored.reset(new unsigned char[static_cast<std::size_t>(nrows * ncols) * w.esize()]);
      convert_block(data, w.dtype, nrows, ncols, w.stored, stored.get(), &seen, row0, col0, w.cols);
      data = stored.get();
    }
    const std::lock_guard<std::mutex> hold(w.nonfinite_lock);
    w.nonfinite.merge(seen);
  }
  write_counted(row0, col0, nrows, ncols, data, ready);
}

bool MatrixWriter::takes_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                               const void* data, const char* what) const {
  const Impl& w = *impl_;
  if (w.committed || (!w.dataset.valid() && !w.in_file))
    throw IoError("cannot write to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (!in_range(row0, nrows, w.rows) || !in_range(col0, ncols, w.cols))
    throw InputError(block_text(row0, nrows, col0, ncols) + " is outside " + in_quotes(w.target) + " (" +
                     shape_text(w.rows, w.cols) + ")");
  if (nrows == 0 || ncols == 0) return false;
  if (data == nullptr) throw std::invalid_argument(std::string(what) + ": null data");
  return true;
}

Stored MatrixWriter::takes_rounded() const { return io::takes_rounded(impl_->stored, impl_->dtype); }

void MatrixWriter::write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                                       const void* data) {
  Impl& w = *impl_;
  if (takes_rounded() == Stored::same) throw std::logic_error("write_rounded_block: C is stored as computed");
  if (!takes_block(row0, col0, nrows, ncols, data, "write_rounded_block")) return;
  if (w.direct_file) {
    w.direct_file->write_rounded_block(row0, col0, nrows, ncols, data);
    return;
  }
  {
    NonfiniteCount seen;
    seen.add_half(data, w.stored == Stored::bf16, nrows, ncols, row0, col0, w.cols);
    const std::lock_guard<std::mutex> hold(w.nonfinite_lock);
    w.nonfinite.merge(seen);
  }
  write_counted(row0, col0, nrows, ncols, data, {});
}

void MatrixWriter::write_chunks(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                                const std::vector<CompressedChunk>& ready, const NonfiniteCount& seen) {
  Impl& w = *impl_;
  if (w.committed || (!w.dataset.valid() && !w.in_file))
    throw IoError("cannot write to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (!w.chunked || w.direct_file || converts(w.stored, w.dtype))
    throw std::logic_error("write_chunks: C is not compressed by tessera as computed");
  const auto tiles = chunks_tiling(w.chunked->layout(), row0, col0, nrows, ncols);
  if (tiles == 0 || static_cast<std::size_t>(tiles) != ready.size())
    throw std::invalid_argument("write_chunks: the chunks do not tile " + block_text(row0, nrows, col0, ncols));
  {
    const std::lock_guard<std::mutex> hold(w.nonfinite_lock);
    w.nonfinite.merge(seen);
  }
  write_counted(row0, col0, nrows, ncols, nullptr, ready);  // (each chunk inside, once: the count makes them all)
}

void MatrixWriter::write_counted(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                                 const void* data, const std::vector<CompressedChunk>& ready) {
  Impl& w = *impl_;
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
    opened = own_dataset(H5Dopen2(file->get(), w.dataset_in_file().c_str(), H5P_DEFAULT));
    if (!opened.valid()) throw_io("cannot open " + w.where() + " to write C");
  }
  const hid_t dataset = w.in_file ? opened.get() : w.dataset.get();
  if (w.chunked) {  // compressed by tessera's threads (or the block's rank), stored by HDF5 as they are
    const auto store = [&](std::int64_t r0, std::int64_t c0, const std::vector<unsigned char>& bytes) {
      const hsize_t offset[2] = {static_cast<hsize_t>(r0), static_cast<hsize_t>(c0)};
      if (H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, offset, bytes.size(), bytes.data()) < 0) throw_io(failed);
    };
    for (const CompressedChunk& c : ready) {
      if (c.row0 < row0 || c.col0 < col0 || c.row0 >= row0 + nrows || c.col0 >= col0 + ncols)
        throw std::invalid_argument("write_block: a compressed chunk lies outside its block");
      w.chunked->mark_stored(c.row0, c.col0);
      store(c.row0, c.col0, c.bytes);
    }
    if (data != nullptr) w.chunked->add(row0, col0, nrows, ncols, data, io_threads(), store);
    if (w.in_file) {
      file->close(opened, failed);
      file->close(failed);
    }
    return;
  }
  auto [file_space, mem_space] =
      block_spaces(dataset, row0 + w.window_row0, nrows, col0 + w.window_col0, ncols, w.window_index, w.stacked_rows);
  if (!file_space.valid()) throw_io("cannot select " + block_text(row0, nrows, col0, ncols) + " of " + w.where());
  // Converted blocks are in the file's own type: HDF5 copies them as they are.
  const Handle stored_type = own_type(converts(w.stored, w.dtype) ? stored_file_type(w.stored, w.dtype) : -1);
  const hid_t memory_type = stored_type.valid() ? stored_type.get() : native_type(w.dtype);
  if (H5Dwrite(dataset, memory_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data) < 0) throw_io(failed);
  if (w.in_file) {
    file->close(opened, failed);
    file->close(failed);
  }
}

void MatrixWriter::set_attributes(const std::vector<Attribute>& attrs) {
  Impl& w = *impl_;
  if (w.committed || (!w.dataset.valid() && !w.in_file))
    throw IoError("cannot write attributes to " + in_quotes(w.target) + ": the writer is already committed or closed");
  if (w.window) return;  // the dataset's attributes are its own: a window of it leaves them as they are
  if (w.in_file) {       // written at the commit, when the file is open again
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
  if (w.chunked && w.chunked->unfinished() > 0)
    throw IoError("cannot commit " + in_quotes(w.target) + ": " + std::to_string(w.chunked->unfinished()) +
                  " of its chunks were not written whole");
  test_pause_before_commit();
  if (w.in_file) {
    w.commit_in_file();
    return;
  }
  if (w.batch != nullptr) {
    w.commit_in_batch();
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

  publish_file(w.temp_path, w.target.file, w.overwrite);
  w.committed = true;
}

void publish_file(const std::string& temp_path, const std::string& target, bool overwrite) {
  // Network file systems may report write errors only on fsync; and the data must be on disk
  // before the rename makes the file look complete.
  const int fd = ::open(temp_path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw IoError("writing " + in_quotes(temp_path) + " failed: " + std::strerror(err));
  }
  ::close(fd);
  log::debug("C is on disk in " + in_quotes(temp_path) + "; renaming it to " + in_quotes(target));

  const std::string what = "cannot rename " + in_quotes(temp_path) + " to " + in_quotes(target);
  const auto appeared = [&] {
    return InputError("output file " + in_quotes(target) +
                      " appeared while tessera was running; pass --overwrite to replace it");
  };
  if (!overwrite) {
    // link() fails if the target exists, so no file that appeared meanwhile is clobbered; some
    // file systems have no hard links, and there the check-then-rename below has to do.
    if (::link(temp_path.c_str(), target.c_str()) == 0) {
      (void)::unlink(temp_path.c_str());
      forget_temporary(temp_path);
      return;
    }
    if (errno == EEXIST) throw appeared();
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0) throw appeared();
  }
  if (std::rename(temp_path.c_str(), target.c_str()) != 0) throw IoError(what + ": " + std::strerror(errno));
  forget_temporary(temp_path);
}

const std::string& MatrixWriter::temporary_path() const { return impl_->temp_path; }

const std::vector<std::string>& MatrixWriter::notes() const { return impl_->notes; }

DirectTarget MatrixWriter::direct_target() const { return impl_->direct; }

std::string MatrixWriter::why_not_direct() const {
  const Impl& w = *impl_;
  if (w.direct.valid()) return "";
  if (w.chunked) return "C is compressed by rank 0's threads, chunk by chunk";
  if (!direct_io_enabled()) return "HDF5 writes the output (TESSERA_HDF5_DIRECT=0)";
  return w.window ? "C goes into a window of an existing dataset: HDF5 writes it through the journal"
                  : "HDF5 writes the output (chunked, compressed or in a file with a user block)";
}

NonfiniteCount MatrixWriter::nonfinite_written() const {
  const std::lock_guard<std::mutex> hold(impl_->nonfinite_lock);
  NonfiniteCount all = impl_->nonfinite;
  if (impl_->direct_file) all.merge(impl_->direct_file->nonfinite_written());
  return all;
}

}  // namespace tessera::io
