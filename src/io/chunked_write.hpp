#pragma once
// Parallel writing of a chunked, compressed C (issue 43 item 4): `run --compression gzip|lz4`.
//
// HDF5 compresses the chunks of one H5Dwrite on the calling thread, one after the other: a
// compressed C would be written at the speed of one core's deflate. Here the blocks of C are cut
// into their chunks, each chunk shuffled (where asked) and compressed by a pool of threads that
// never enter HDF5, and the calling thread hands the finished chunks to HDF5 with H5Dwrite_chunk
// (the "direct chunk write": HDF5 only stores them and indexes them). The bytes are what HDF5's
// pipeline [shuffle,] deflate, or [shuffle,] the registered LZ4 filter 32004 or Zstandard filter
// 32015 (those h5py users write through hdf5plugin.LZ4 and .Zstd), would write, so every HDF5
// reader with that filter reads them as usual (io/lz4_filter.hpp, io/zstd_filter.hpp).
//
// A chunk is finished when every one of its elements inside the dataset has arrived: blocks may
// come in any order and cut chunks anywhere (the blocks of several ranks, gathered); the pieces
// of unfinished chunks wait here. Taken only for the new 2-D datasets tessera creates with that
// pipeline (io/matrix_writer.cpp); everything else is left to HDF5.
//
// Every rank may compress its own part (job/gather.hpp): the chunks that lie wholly inside its
// block of C (compress_inside), sent to rank 0 (with the block only where they do not tile it),
// which stores them as they came (mark_stored, or MatrixWriter::write_chunks for a tiled block)
// and compresses only the chunks that straddle blocks. The bytes are the same
// whoever compresses them.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace tessera::io {

// The compression of each chunk: deflate (a zlib stream at `level`, HDF5's filter 1), LZ4 (HDF5's
// registered filter 32004, io/lz4_filter.hpp) or Zstandard (32015 at `level`, io/zstd_filter.hpp).
enum class Codec : int { deflate = 0, lz4 = 1, zstd = 2 };
// Whether this build compresses `codec` itself (LZ4 and zstd need liblz4 and libzstd at build
// time; deflate always).
bool codec_built(Codec codec);

// The dataset and pipeline a ChunkedWriter writes: what another rank needs to compress its part.
struct ChunkLayout {
  std::int64_t rows = 0, cols = 0, chunk_rows = 0, chunk_cols = 0;
  std::size_t esize = 0;
  bool shuffle = false;
  int level = 1;  // deflate's 1-9, zstd's 1-22; 1 for LZ4 (the filter's default acceleration)
  Codec codec = Codec::deflate;
};

// How many chunks of `layout` tile the block nrows x ncols at (row0, col0) exactly: each wholly
// inside it (a chunk at the dataset's edge by its part inside the dataset) and every element of the
// block in one of them. 0 where the block cuts a chunk, lies outside the dataset or is empty.
std::int64_t chunks_tiling(const ChunkLayout& layout, std::int64_t row0, std::int64_t col0, std::int64_t nrows,
                           std::int64_t ncols);

// One chunk, filtered: its first element's place in the dataset, and its bytes.
struct CompressedChunk {
  std::int64_t row0 = 0, col0 = 0;
  std::vector<unsigned char> bytes;
};
// Chunks as one message, and back. unpack throws IoError for bytes that are no such message.
std::vector<unsigned char> pack(const std::vector<CompressedChunk>& chunks);
std::vector<CompressedChunk> unpack(const std::vector<unsigned char>& message);

class ChunkedWriter {
 public:
  // A rows x cols dataset of `esize`-byte elements in chunks of chunk_rows x chunk_cols, filtered
  // by shuffle (if `shuffle`) then deflate at `level` (1-9), LZ4 (`level` 1) or zstd (`level`
  // 1-22). std::invalid_argument for a codec this build lacks (codec_built), a level out of its
  // range, or an LZ4 chunk of 2 GiB or more (the filter's limit).
  ChunkedWriter(std::int64_t rows, std::int64_t cols, std::int64_t chunk_rows, std::int64_t chunk_cols,
                std::size_t esize, bool shuffle, int level, Codec codec = Codec::deflate);
  explicit ChunkedWriter(const ChunkLayout& layout)
      : ChunkedWriter(layout.rows, layout.cols, layout.chunk_rows, layout.chunk_cols, layout.esize, layout.shuffle,
                      layout.level, layout.codec) {}
  ChunkLayout layout() const { return {rows_, cols_, chunk_rows_, chunk_cols_, esize_, shuffle_, level_, codec_}; }

  // The chunks wholly inside a block (nrows x ncols at (row0, col0), row-major; a chunk at the
  // dataset's edge counts by its part inside the dataset), filtered by `threads` threads: what
  // add() would make of them. Keeps nothing.
  std::vector<CompressedChunk> compress_inside(std::int64_t row0, std::int64_t col0, std::int64_t nrows,
                                               std::int64_t ncols, const void* data, int threads) const;
  // The chunk at (row0, col0) is stored already (another rank compressed it): add() skips it.
  void mark_stored(std::int64_t row0, std::int64_t col0);

  // One finished chunk: its first element's place in the dataset, and its filtered bytes.
  using Store = std::function<void(std::int64_t row0, std::int64_t col0, const std::vector<unsigned char>& bytes)>;
  // A block of C (nrows x ncols at (row0, col0), row-major) added: the chunks it finishes are
  // compressed by `threads` threads (this one among them) and handed to `store` on this thread, in
  // order, each as soon as it and those before it are ready: storing overlaps the compression of
  // the next chunks (at most 4 a thread in flight). Throws what `store` throws.
  void add(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data, int threads,
           const Store& store);
  // Chunks still waiting for elements (0 once every element of the dataset has arrived).
  std::size_t unfinished() const { return waiting_.size(); }

  // The filtered bytes of one chunk's buffer (chunk_rows x chunk_cols elements): the pipeline's
  // output, for tests.
  std::vector<unsigned char> filter(const std::vector<unsigned char>& raw) const;

 private:
  struct Waiting {
    std::vector<unsigned char> raw;  // chunk_rows x chunk_cols elements, zeros beyond the dataset
    std::int64_t filled = 0;         // elements arrived
  };
  std::int64_t rows_, cols_, chunk_rows_, chunk_cols_;
  std::size_t esize_;
  bool shuffle_;
  int level_;
  Codec codec_;
  std::map<std::pair<std::int64_t, std::int64_t>, Waiting> waiting_;  // by chunk (row, col) index
  std::set<std::pair<std::int64_t, std::int64_t>> stored_;            // mark_stored's, by index
};

}  // namespace tessera::io
