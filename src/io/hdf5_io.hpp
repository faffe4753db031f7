#pragma once
// HDF5 input and output of 2-D row-major matrices (as h5py / numpy write them).
// Knows nothing of MPI or CUDA. Every failure throws InputError (bad user input: missing file,
// missing dataset, wrong rank or type) or IoError (the file system or the library failed), with
// one line that names the file and dataset.
//
// Types: float32 and float64 datasets are read as they are; integer datasets (any width,
// signed or not) are converted to float64 on read, exactly up to 2^53; anything else
// (strings, compounds, float16, complex) is refused.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "io/direct_io.hpp"
#include "io/nonfinite.hpp"
#include "io/stored_type.hpp"

namespace tessera::io {

// "file.h5:/group/name". The dataset path must start with '/'; the last ':' followed by '/'
// splits file and dataset, so file names containing ':' (even ":/") still work. A ':' written
// "\:" is part of a name and never splits, so a dataset path holding ":/" is written with
// "\:/" (e.g. "f.h5:/run\:/A" names dataset "/run:/A" of f.h5); "\\" stands for one '\'.
// Any other '\' is kept as it is.
//
// A window of the dataset may follow the path, as numpy writes one: "f.h5:/A[0:1000, 200:]"
// (rows, then columns; a bound left out is the start or the end, a negative one counts from the
// end). Steps and single indices of a row or column are refused. One matrix of a 3-D dataset (a
// batch, b x rows x cols, as torch and h5py users store them) is named by its index first, as
// numpy indexes it: "f.h5:/A[3]" (the fourth matrix; negative counts from the end), with a window
// of it after: "f.h5:/A[3, 0:100, :]". A bracket that reads as neither is part of the name.
struct Slice {
  std::optional<std::int64_t> index;  // the matrix of a 3-D dataset
  std::optional<std::int64_t> row_begin, row_end, col_begin, col_end;
  std::string text;  // as parse() writes it back, e.g. "[0:1000, 200:]", "[3]", "[3, 0:10, :]"
};
// A window's place in a rows x cols dataset.
struct Window {
  std::int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
};
// Throws InputError (naming `what`) for bounds outside the dataset or an empty window.
Window resolve(const Slice& slice, std::int64_t rows, std::int64_t cols, const std::string& what);
// "r0:r1, c0:c1", "i" or "i, r0:r1, c0:c1" (between the brackets) read; InputError for steps,
// single indices of a row or column, or other axes. looks_like_slice: whether the text between
// brackets is meant as a window (or index) at all.
Slice parse_slice(const std::string& inner);
// The matrix a slice's index names in a 3-D dataset of `matrices` (negative counts from the end);
// InputError (naming `what`) outside it.
std::int64_t resolve_index(const Slice& slice, std::int64_t matrices, const std::string& what);
bool looks_like_slice(const std::string& inner);

struct DatasetRef {
  DatasetRef() = default;
  DatasetRef(std::string file_, std::string path_, std::optional<Slice> slice_ = std::nullopt)
      : file(std::move(file_)), path(std::move(path_)), slice(std::move(slice_)) {}
  std::string file;
  std::string path;
  std::optional<Slice> slice;                        // a window of the dataset: read only that (inputs)
  static DatasetRef parse(const std::string& text);  // throws InputError
  std::string str() const { return file + ":" + path + (slice ? slice->text : ""); }
  // As parse() reads it back (escapes where the names need them): str() unless a name holds
  // ':/' or '\\'.
  std::string text() const;
  // The file as an absolute path (the working directory's, lexically normalized; links kept).
  DatasetRef absolute() const;
};

struct DatasetInfo {
  std::int64_t rows = 0;  // the window's, where the reference names one
  std::int64_t cols = 0;
  std::int64_t row0 = 0, col0 = 0;                // the window's first row and column in the dataset
  std::int64_t stored_rows = 0, stored_cols = 0;  // the dataset's own shape (of each matrix, when 3-D)
  std::int64_t index = -1;                        // the matrix read of a 3-D dataset; -1: a 2-D one, or all
  std::int64_t stored_matrices = 0;               // a 3-D dataset's first dimension; 0: 2-D
  // A 3-D dataset named without an index: its matrices stacked, one (b * rows) x cols matrix
  // (rows is then b times stored_rows), as a batch with a shared B multiplies in one GEMM.
  bool stacked() const { return stored_matrices > 0 && index < 0; }
  std::string stored_type;  // "float32", "float64", "int32", "uint8", ...
  bool is_integer = false;
  DType natural = DType::f64;        // float32 -> f32; float64 and integers -> f64
  std::string layout;                // "contiguous", "chunked" or "compact"
  std::vector<std::int64_t> chunk;   // chunk dims when chunked
  std::vector<std::string> filters;  // e.g. {"deflate"}
};

// Open read-only and describe. Throws InputError: file missing, not an HDF5 file / truncated or
// corrupt, dataset missing, not a dataset, not 2-D, unsupported type.
DatasetInfo inspect(const DatasetRef& ref);

// Read rows [row0, row0+nrows) x cols [col0, col0+ncols) into `out` (row-major, nrows x ncols,
// converted to `as`). Only that hyperslab is read from the file.
void read_block(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                DType as, void* out);
// The same block of a dataset stored as the 16-bit float `half` (Stored::f16 or Stored::bf16),
// as its 2-byte values, not widened (what the staged GEMM uploads to multiply them as stored).
// Throws InputError where the dataset is stored otherwise.
void read_block_half(const DatasetRef& ref, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                     std::int64_t ncols, Stored half, void* out);

// Attributes written on a dataset.
struct Attribute {
  std::string name;
  enum class Kind { text, integer, real, integers } kind = Kind::text;
  std::string text;
  std::int64_t integer = 0;
  double real = 0;
  std::vector<std::int64_t> integers;
  static Attribute of(std::string name, std::string v);
  static Attribute of(std::string name, const char* v) { return of(std::move(name), std::string(v)); }
  static Attribute of(std::string name, std::int64_t v);
  static Attribute of(std::string name, double v);
  static Attribute of(std::string name, std::vector<std::int64_t> v);
};

// What the writer does when the output file exists: add the dataset to it (run's C and generate's
// matrix, issue #17: `overwrite` then replaces that dataset only), or replace the whole file (a
// later run of --repeat, replacing the file the first run created: job/repeats.cpp).
enum class ExistingFile { add_dataset, replace_file };

class OutputBatch;

struct WriteOptions {
  bool overwrite = false;
  ExistingFile existing_file = ExistingFile::add_dataset;
  std::vector<std::int64_t> chunk;  // empty: contiguous; else {rows, cols}
  // > 0: a 3-D dataset of that many matrices (a batch), rows / matrices rows each, written through
  // the same (rows x cols) blocks as a 2-D one: the matrices stacked. Contiguous only.
  std::int64_t matrices = 0;
  int gzip_level = 0;  // 0: none; 1..9 needs chunk (defaulted if empty)
  // Another compression, by the HDF5 filter of this id instead of gzip (lz4 32004, zstd 32015: by
  // tessera's threads where built with their libraries; bzip2 307 through its plugin:
  // filter_plugin_id); 0: none. Needs chunks (defaulted if empty).
  int plugin_filter = 0;
  int plugin_level = 0;  // that filter's level where it has one (zstd: 1-22); 0: its default
  bool shuffle = false;  // HDF5's shuffle filter before the compression (needs chunks)
  // What C's elements are stored as when not as computed (--c-dtype: io/stored_type.hpp): the
  // blocks given to write_block are converted first. A new dataset only (not a window).
  Stored stored = Stored::same;
  // A new file shared with other results, committed with them (OutputBatch); null: this result's own.
  OutputBatch* batch = nullptr;
};

// The HDF5 filter id of a compression other than gzip ("lz4", "zstd", "bzip2"), or 0 for a name
// that is none of them.
int filter_plugin_id(const std::string& name);
// The threads that compress a C of `compression` ("gzip", "lz4", ...) out of a pool of `threads`:
// the pool where tessera compresses it itself (gzip; lz4 and zstd where built with their
// libraries), else 1 (HDF5's filter pipeline, on the writing thread).
int compression_threads(const std::string& compression, int threads);
// The library tessera compresses and decompresses `codec` ("gzip", "lz4", "zstd") with, and its
// version ("libdeflate 1.14", "zlib 1.2.13", "liblz4 1.9.4", "libzstd 1.5.4"); "" where this build
// has none (lz4 and zstd then go through HDF5's plugins). For `tessera info` and the provenance.
std::string compression_library(const std::string& codec);

// Several results written into one new file and committed together (the products of one launch:
// job/launch.hpp). The first MatrixWriter given the batch creates the file under its temporary name
// (as a writer of a new file does), each later one adds its dataset to it; a writer's commit() only
// closes its dataset there, and the batch's commit() flushes the file, makes it durable and renames
// it into place: every result of the batch appears at once, or none does. A writer destroyed
// uncommitted unlinks its dataset from the file (a failed product leaves nothing in it); a batch
// destroyed uncommitted removes the file. Used only while the target file does not exist.
class OutputBatch {
 public:
  OutputBatch(std::string file, bool overwrite);
  ~OutputBatch();
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;

  const std::string& file() const;
  int results() const;  // committed into the batch so far
  // Flush, fsync, rename (or link) into place; with no result committed into it, nothing is made.
  // If !overwrite and the target appeared meanwhile, fails (the results stay uncommitted).
  void commit();

 private:
  friend class MatrixWriter;
  struct State;
  std::unique_ptr<State> s_;
};

// Writes a 2-D dataset (or a 3-D batch of matrices, WriteOptions::matrices, written as their
// stack) block by block, so that no result appears before it is complete:
//  - a new file (or, with ExistingFile::replace_file and overwrite, one replacing the file):
//    written under a temporary name (io::temporary_name: "<file>.tessera-partial-<host>-<pid>")
//    in the target's directory; commit() closes and renames it into place.
//  - an existing file (ExistingFile::add_dataset): a temporary dataset in it
//    (io/dataset_in_file.hpp), the file closed between blocks; commit() moves it to the target
//    path (with overwrite replacing the dataset there; nothing else in the file is touched).
//    The file is locked against other tessera runs from the constructor on, and every change
//    HDF5 makes to it goes through a rollback journal (io/journal.hpp).
// Destroyed without commit() (an error, an exception) the temporary file is removed, or the
// existing file rolled back to what it was byte for byte, so a failed run never leaves a result
// that looks complete.
//
// The constructor fails early (before any compute) with InputError if the target exists and may
// not be replaced (the file, or in an existing file the dataset, and !overwrite; a group where
// the dataset goes), if the directory does not exist or is not writable, or if an existing file
// is not HDF5 or read-only; IoError if the temporary file or dataset cannot be created.
class MatrixWriter : public BlockSink {
 public:
  MatrixWriter(const DatasetRef& target, std::int64_t rows, std::int64_t cols, DType dtype, const WriteOptions& opts);
  ~MatrixWriter() override;
  MatrixWriter(const MatrixWriter&) = delete;
  MatrixWriter& operator=(const MatrixWriter&) = delete;

  // data: nrows x ncols row-major of `dtype`, placed at (row0, col0).
  void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                   const void* data) override;
  void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data,
                   const std::vector<CompressedChunk>& ready) override;
  void write_chunks(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                    const std::vector<CompressedChunk>& ready, const NonfiniteCount& seen) override;
  // A float32 C stored as float16 or bfloat16 (--c-dtype, or inputs so stored) takes blocks
  // already rounded to it, as every path of this writer stores them.
  Stored takes_rounded() const override;
  void write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                           const void* data) override;
  // The chunks and pipeline of a C whose chunks tessera compresses (gzip into a new dataset),
  // for the other ranks to compress theirs (ChunkedWriter::compress_inside); nullopt otherwise.
  std::optional<ChunkLayout> chunk_layout() const;
  void set_attributes(const std::vector<Attribute>& attrs);
  // Flush, close, rename (or move the dataset's link) into place. If !overwrite and the target
  // appeared meanwhile, fails.
  void commit();
  // The temporary file ("" when writing into an existing file).
  const std::string& temporary_path() const;
  // For the user: leftovers of earlier runs that the constructor removed from an existing file.
  const std::vector<std::string>& notes() const;
  // Where the dataset's elements lie in the temporary file, for other processes to write their
  // blocks there (io/direct_io.hpp); invalid for chunked or compressed output, or with
  // TESSERA_HDF5_DIRECT=0. Their writes must be durable (BlockFile::sync) before commit().
  DirectTarget direct_target() const;
  // Why direct_target() is invalid, for the report: "C is chunked and compressed ...", "HDF5 writes
  // the output (TESSERA_HDF5_DIRECT=0)", ...; "" where it is valid.
  std::string why_not_direct() const;
  // NaN and Inf among the elements this writer wrote so far (counted by write_block), for the
  // caller to decide before commit() whether such a C may be committed. Blocks that other
  // processes wrote in place are counted by their BlockFile.
  NonfiniteCount nonfinite_written() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // The checks every block passes first (the writer open, the block inside C, data given): false
  // for an empty block, which writes nothing; throws for any other failing one. `what` names the
  // caller in a logic error.
  bool takes_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data,
                   const char* what) const;
  // write_block's and write_chunks' part in HDF5: a block as stored (its NaN and Inf counted);
  // where C is compressed, `ready` stored as they are and the rest of the block (`data`: null
  // where `ready` tiles it) compressed and stored.
  void write_counted(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data,
                     const std::vector<CompressedChunk>& ready);
};

// Read all attributes of a dataset as text (for `verify`, tests and `info`).
std::vector<std::pair<std::string, std::string>> read_attributes(const DatasetRef& ref);

std::string library_version();  // e.g. "1.10.8"
bool library_is_parallel();     // H5_HAVE_PARALLEL

}  // namespace tessera::io
