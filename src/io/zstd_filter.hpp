#pragma once
// HDF5's Zstandard filter (registered id 32015: hdf5plugin.Zstd, h5py's `compression=32015`), done
// by tessera over libzstd: the format, and the filter registered with HDF5 so that tessera reads
// and writes zstd datasets with no plugin installed (Debian has none: its python3-hdf5plugin lacks
// Zstd; PyPI's hdf5plugin has it). Internal to io/.
//
// The format of one chunk: one Zstandard frame, its content size in its header (what
// ZSTD_compress writes); the filter's first value is the level it was written at.
#include <cstddef>
#include <vector>

namespace tessera::io {

// Whether this build has libzstd (else zstd_encode throws, zstd_decode returns false and
// register_zstd_filter does nothing).
bool zstd_built();
// libzstd's version ("1.5.4"), "" without it.
const char* zstd_library_version();

// The levels a chunk may be written at, and the filter's default (hdf5plugin's).
inline constexpr int kZstdMinLevel = 1, kZstdMaxLevel = 22, kZstdDefaultLevel = 3;

// One chunk of `bytes` bytes as a frame at `level` (clamped to zstd's levels, its fast negative
// ones included), its content's checksum in it. Throws IoError where libzstd fails.
std::vector<unsigned char> zstd_encode(const unsigned char* in, std::size_t bytes, int level);

// One chunk back into `out` (resized to its size): false where `in` is not one whole frame whose
// header names its size, no more than `limit`, and which decodes to exactly that.
bool zstd_decode(const unsigned char* in, std::size_t bytes, std::vector<unsigned char>& out, std::size_t limit);

namespace hdf5 {
// Registers tessera's Zstandard filter with HDF5 (both ways), in place of any plugin; a no-op in a
// build without libzstd.
void register_zstd_filter();
}  // namespace hdf5

}  // namespace tessera::io
