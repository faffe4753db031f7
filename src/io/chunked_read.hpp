#pragma once
// Parallel reading of chunked (and deflate/LZ4/zstd/shuffle-compressed) HDF5 datasets.
//
// HDF5 decompresses the chunks of one H5Dread on the calling thread, one after the other, through
// its chunk cache: a gzip-compressed input (h5py's `compression="gzip"`) reads at the speed of one
// core's inflate. Here the calling thread fetches each raw (still compressed) chunk with
// H5Dread_chunk, an index look-up and one read, and a pool of threads that never enter HDF5
// decompresses, unshuffles and places the chunks while the next ones are fetched.
//
// Taken only where every step is understood: a chunked 2-D dataset stored as native float32 or
// float64 (read as either), filtered by deflate, LZ4 or Zstandard (HDF5's filters 32004 and 32015,
// in a build with their libraries: io/lz4_filter.hpp, io/zstd_filter.hpp), shuffle, in any order and any number of times (HDF5 undoes a pipeline in the
// reverse of the order it was written in, and so does this reader). Everything else, unfiltered
// chunks included, is left to HDF5.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::io {

// Reads rows [row0, row0+nrows) x cols [col0, col0+ncols) of the open dataset `dset` into `out`
// (row-major, as `as`) and returns true, or returns false without reading when this reader does
// not apply (HDF5 should then read it), also when a chunk the block needs was never written (HDF5
// returns the fill value there; io/data_sources decides up front whether that is allowed).
// Throws IoError when a chunk cannot be read or does not decompress. Call with the HDF5 lock held (only this thread
// enters HDF5; io_threads() - 1 helpers decompress, io/direct_io.hpp).
// keep_half: a dataset stored as a 16-bit float is read as its 2-byte values (not widened).
bool read_chunked(hid_t dset, const std::string& where, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                  std::int64_t ncols, DType as, void* out, bool keep_half = false);

// Whether read_chunked takes `dset` at all (its layout, type and filters; a block of it may still
// go to HDF5 where a chunk it needs was never written): for what `-v` says of a read.
bool chunk_reader_takes(hid_t dset);


}  // namespace tessera::io
