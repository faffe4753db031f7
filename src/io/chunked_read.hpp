#pragma once
// Parallel reading of chunked (and deflate/shuffle-compressed) HDF5 datasets.
//
// HDF5 decompresses the chunks of one H5Dread on the calling thread, one after the other, through
// its chunk cache: a gzip-compressed input (h5py's `compression="gzip"`) reads at the speed of one
// core's inflate. Here the chunk addresses are looked up through HDF5 (under the caller's HDF5
// lock), then the raw chunks are read with pread and inflated, unshuffled and copied into place by
// a pool of threads that never enter HDF5.
//
// Taken only where every step is understood: a chunked 2-D dataset in a plain POSIX file (sec2
// driver, no user block), stored as native float32 or float64 (read as either), whose filters are
// among deflate and shuffle. Everything else is left to HDF5 (plan() returns nothing).
#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::io {

// Where the chunks of the requested block lie, and how to undo their filters. Built under the
// HDF5 lock; read() runs without it.
struct ChunkedPlan {
  struct Chunk {
    std::int64_t row0 = 0, col0 = 0;  // the chunk's origin in the dataset
    std::int64_t addr = 0;            // byte offset in the file
    std::int64_t bytes = 0;           // stored (compressed) size
    unsigned filter_mask = 0;         // bit i set: filter i was skipped for this chunk
  };
  std::string file;                   // the file that holds the dataset (also behind an external link)
  std::int64_t rows = 0, cols = 0;    // the dataset's shape
  std::int64_t chunk_rows = 0, chunk_cols = 0;
  std::size_t stored_size = 4;        // bytes per stored element (4: float32, 8: float64)
  enum class Filter { deflate, shuffle };
  std::vector<Filter> filters;        // in the order HDF5 applied them when writing
  std::vector<Chunk> chunks;          // those that overlap the block
};

// The plan for reading rows [row0, row0+nrows) x cols [col0, col0+ncols) of the open dataset
// `dset` as `as`, or nothing when this reader does not apply (HDF5 then reads it). Throws
// InputError when a chunk the block needs was never written (HDF5 would return the fill value
// for data the file does not hold). Call with the HDF5 lock held.
std::optional<ChunkedPlan> plan_chunked_read(hid_t dset, const std::string& where, std::int64_t row0,
                                             std::int64_t nrows, std::int64_t col0, std::int64_t ncols, DType as);

// Reads the block planned above into `out` (row-major nrows x ncols of `as`) with a pool of
// read_threads() threads. Throws IoError on a failed read or a chunk that does not decompress.
// Needs no HDF5 lock.
void read_chunked(const ChunkedPlan& plan, const std::string& where, std::int64_t row0, std::int64_t nrows,
                  std::int64_t col0, std::int64_t ncols, DType as, void* out);

// Threads the reader may use: TESSERA_IO_THREADS if set, else what set_read_threads() was given
// (the job: the node's cores over its ranks), else the cores of this machine.
int read_threads();
void set_read_threads(int threads);

// Which inflate the reader was built with ("libdeflate" or "zlib"), for `tessera info`.
const char* inflate_library();

}  // namespace tessera::io
