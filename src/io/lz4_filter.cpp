#include "io/lz4_filter.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/error.hpp"
#include "io/hdf5_library.hpp"

#ifdef TESSERA_HAVE_LZ4
#include <lz4.h>
#endif

namespace tessera::io {

#ifdef TESSERA_HAVE_LZ4
namespace {

constexpr std::size_t kDefaultBlock = std::size_t{1} << 30;  // the filter's default
constexpr std::size_t kHeader = 12;                          // size (8) and block size (4)
constexpr H5Z_filter_t kLz4 = 32004;

void put_be(unsigned char* at, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) at[i] = static_cast<unsigned char>(v & 0xff);
}

std::uint64_t get_be(const unsigned char* at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | at[i];
  return v;
}

}  // namespace

bool lz4_built() { return true; }
const char* lz4_library_version() { return LZ4_versionString(); }

std::vector<unsigned char> lz4_encode(const unsigned char* in, std::size_t bytes, std::size_t block) {
  if (block == 0 || block > kDefaultBlock) block = kDefaultBlock;
  block = std::min(block, std::max<std::size_t>(bytes, 1));
  const std::size_t blocks = bytes == 0 ? 0 : (bytes - 1) / block + 1;
  const auto bound = static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(block)));
  std::vector<unsigned char> out(kHeader + blocks * (4 + std::max(bound, block)));
  put_be(out.data(), bytes, 8);
  put_be(out.data() + 8, block, 4);
  std::size_t at = kHeader;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = b * block, size = std::min(block, bytes - from);
    const auto* src = reinterpret_cast<const char*>(in + from);
    auto* dst = reinterpret_cast<char*>(out.data() + at + 4);
    const int got = LZ4_compress_default(src, dst, static_cast<int>(size), static_cast<int>(bound));
    if (got <= 0) throw IoError("compressing a chunk with LZ4 failed");
    std::size_t stored = static_cast<std::size_t>(got);
    if (stored >= size) {  // no gain: the block as it is, its length saying so
      std::memcpy(dst, src, size);
      stored = size;
    }
    put_be(out.data() + at, stored, 4);
    at += 4 + stored;
  }
  out.resize(at);
  return out;
}

namespace {

// The chunk's size where `in` is a whole chunk of the format whose size is at most `limit` and
// which its blocks could decode to (each stored block as long as its part, each LZ4 one at most
// 255 times its length plus a little: LZ4's largest ratio); else nothing. Walks the block headers
// before anything is allocated, so a header claiming gigabytes from a few bytes costs nothing.
std::optional<std::size_t> checked_size(const unsigned char* in, std::size_t bytes, std::size_t limit) {
  if (bytes < kHeader) return std::nullopt;
  const std::uint64_t total = get_be(in, 8);
  std::uint64_t block = get_be(in + 8, 4);
  if (total > limit || (block == 0 && total > 0)) return std::nullopt;
  block = std::min(block, total);
  std::size_t at = kHeader;
  for (std::uint64_t done = 0; done < total;) {
    const std::uint64_t size = std::min<std::uint64_t>(block, total - done);
    if (bytes - at < 4) return std::nullopt;
    const std::uint64_t stored = get_be(in + at, 4);
    at += 4;
    if (stored > bytes - at || (stored != size && size > 255 * stored + 64)) return std::nullopt;
    at += static_cast<std::size_t>(stored);
    done += size;
  }
  if (at != bytes) return std::nullopt;
  return static_cast<std::size_t>(total);
}

// Decodes a chunk checked_size accepted into `out` (its size long).
bool decode_into(const unsigned char* in, std::size_t total, unsigned char* out) {
  const std::size_t block = std::min<std::size_t>(static_cast<std::size_t>(get_be(in + 8, 4)), total);
  std::size_t at = kHeader, done = 0;
  while (done < total) {
    const std::size_t size = std::min(block, total - done);
    const auto stored = static_cast<std::size_t>(get_be(in + at, 4));
    at += 4;
    if (stored == size) {
      std::memcpy(out + done, in + at, size);
    } else {
      // Blocks are at most 1 GiB by the writers' rule, 4 GiB by the format: beyond int, refused.
      if (size > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE) || stored > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE))
        return false;
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in + at), reinterpret_cast<char*>(out + done),
                                          static_cast<int>(stored), static_cast<int>(size));
      if (got < 0 || static_cast<std::size_t>(got) != size) return false;
    }
    at += stored;
    done += size;
  }
  return true;
}

}  // namespace

bool lz4_decode(const unsigned char* in, std::size_t bytes, std::vector<unsigned char>& out, std::size_t limit) {
  const std::optional<std::size_t> total = checked_size(in, bytes, limit);
  if (!total) return false;
  out.resize(*total);
  return decode_into(in, *total, out.data());
}

namespace hdf5 {
namespace {

// HDF5's filter callback, both ways: `*buf` (`nbytes` long) replaced by a malloc'd buffer of the
// result; its size returned, 0 on failure (HDF5 then fails the read or write, naming the filter).
// Forward, cd_values[0] > 0 sets the block size, as for the plugin.
size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
  try {
    const auto* in = static_cast<const unsigned char*>(*buf);
    if (flags & H5Z_FLAG_REVERSE) {
      // Straight into the buffer HDF5 takes: a chunk is under 4 GiB in HDF5, and no larger than
      // its blocks can decode to (checked before anything is allocated).
      const std::optional<std::size_t> total = checked_size(in, nbytes, std::size_t{0xffffffff});
      if (!total) return 0;
      void* out = std::malloc(std::max<std::size_t>(*total, 1));
      if (out == nullptr) return 0;
      if (!decode_into(in, *total, static_cast<unsigned char*>(out))) {
        std::free(out);
        return 0;
      }
      return hand_to_hdf5(buf, buf_size, out, *total, *total);
    }
    if (nbytes > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) return 0;
    return hand_to_hdf5(buf, buf_size, lz4_encode(in, nbytes, cd_nelmts > 0 ? cd_values[0] : 0));
  } catch (...) {
    return 0;
  }
}

}  // namespace

void register_lz4_filter() {
  static const H5Z_class2_t lz4 = {H5Z_CLASS_T_VERS, kLz4,    1,     1, "lz4 (tessera's, liblz4)",
                                   nullptr,          nullptr, filter};
  (void)H5Zregister(&lz4);
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace hdf5
#else
bool lz4_built() { return false; }
const char* lz4_library_version() { return ""; }
std::vector<unsigned char> lz4_encode(const unsigned char*, std::size_t, std::size_t) {
  throw IoError("this build of tessera has no LZ4 (liblz4)");
}
bool lz4_decode(const unsigned char*, std::size_t, std::vector<unsigned char>&, std::size_t) { return false; }
namespace hdf5 {
void register_lz4_filter() {}
}  // namespace hdf5
#endif

}  // namespace tessera::io
