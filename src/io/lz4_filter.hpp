#pragma once
// HDF5's LZ4 filter (registered id 32004: Debian's hdf5-filter-plugin, hdf5plugin.LZ4, h5py's
// `compression=32004`), done by tessera over liblz4: the format, and the filter registered with
// HDF5 so that tessera reads and writes LZ4 datasets with no plugin installed (the GPU machine has
// none). Internal to io/.
//
// The format of one chunk: its uncompressed size (8 bytes, big-endian), the block size (4 bytes,
// big-endian; the whole chunk, at most 1 GiB, unless the dataset's first filter value sets
// another), then each block as its stored length (4 bytes, big-endian) and its bytes: LZ4's where
// they are shorter than the block, else the block as it is (a length equal to the block's says so).
#include <cstddef>
#include <vector>

namespace tessera::io {

// Whether this build has liblz4 (else nothing below does anything: lz4_encode and lz4_decode
// must not be called, and register_lz4_filter is a no-op).
bool lz4_built();
// liblz4's version ("1.9.4"), "" without it.
const char* lz4_library_version();

// One chunk of `bytes` bytes in the filter's format, in blocks of `block` bytes (0: the default,
// the whole chunk up to 1 GiB). Throws IoError where liblz4 fails.
std::vector<unsigned char> lz4_encode(const unsigned char* in, std::size_t bytes, std::size_t block = 0);

// One chunk back from the filter's format into `out` (resized to its size): false where `in` is no
// such chunk (truncated, a length past its end, a block that does not decode to its size, or a size
// above `limit`), `out` then unspecified.
bool lz4_decode(const unsigned char* in, std::size_t bytes, std::vector<unsigned char>& out, std::size_t limit);

namespace hdf5 {
// Registers tessera's LZ4 filter with HDF5 (both ways), in place of any plugin; a no-op in a
// build without liblz4.
void register_lz4_filter();
}  // namespace hdf5

}  // namespace tessera::io
