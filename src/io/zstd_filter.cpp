#include "io/zstd_filter.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"

#ifdef TESSERA_HAVE_ZSTD
#include <zstd.h>
#endif

namespace tessera::io {

#ifdef TESSERA_HAVE_ZSTD
namespace {

constexpr H5Z_filter_t kZstd = 32015;

// One compression context per thread, kept (making one costs more than a small chunk's work).
struct Contexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Contexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};
Contexts& contexts() {
  thread_local Contexts mine;
  if (mine.c == nullptr || mine.d == nullptr) throw IoError("libzstd could not make a context");
  return mine;
}

}  // namespace

bool zstd_built() { return true; }

std::vector<unsigned char> zstd_encode(const unsigned char* in, std::size_t bytes, int level) {
  std::vector<unsigned char> out(ZSTD_compressBound(bytes));
  const std::size_t got = ZSTD_compressCCtx(contexts().c, out.data(), out.size(), in, bytes,
                                            std::clamp(level, kZstdMinLevel, kZstdMaxLevel));
  if (ZSTD_isError(got)) throw IoError(std::string("compressing a chunk with zstd failed: ") + ZSTD_getErrorName(got));
  out.resize(got);
  return out;
}

bool zstd_decode(const unsigned char* in, std::size_t bytes, std::vector<unsigned char>& out, std::size_t limit) {
  const unsigned long long size = ZSTD_getFrameContentSize(in, bytes);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > limit) return false;
  // One frame, nothing after it.
  if (ZSTD_findFrameCompressedSize(in, bytes) != bytes) return false;
  out.resize(static_cast<std::size_t>(size));
  const std::size_t got = ZSTD_decompressDCtx(contexts().d, out.data(), out.size(), in, bytes);
  return !ZSTD_isError(got) && got == size;
}

namespace hdf5 {
namespace {

// HDF5's filter callback, both ways: `*buf` (`nbytes` long) replaced by a malloc'd buffer of the
// result; its size returned, 0 on failure (HDF5 then fails the read or write, naming the filter).
// Forward, cd_values[0] is the level (hdf5plugin's default 3 where none is given).
size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
  try {
    std::vector<unsigned char> result;
    const auto* in = static_cast<const unsigned char*>(*buf);
    if (flags & H5Z_FLAG_REVERSE) {
      if (!zstd_decode(in, nbytes, result, std::size_t{0xffffffff})) return 0;  // a chunk is under 4 GiB
    } else {
      const int level = cd_nelmts > 0 && cd_values[0] > 0 && cd_values[0] <= kZstdMaxLevel
                            ? static_cast<int>(cd_values[0])
                            : kZstdDefaultLevel;
      result = zstd_encode(in, nbytes, level);
    }
    void* out = std::malloc(std::max<std::size_t>(result.size(), 1));
    if (out == nullptr) return 0;
    if (!result.empty()) std::memcpy(out, result.data(), result.size());
    std::free(*buf);
    *buf = out;
    *buf_size = std::max<std::size_t>(result.size(), 1);
    return result.size();
  } catch (...) {
    return 0;
  }
}

}  // namespace

void register_zstd_filter() {
  static const H5Z_class2_t zstd = {H5Z_CLASS_T_VERS, kZstd,   1,     1, "zstd (tessera's, libzstd)",
                                    nullptr,          nullptr, filter};
  (void)H5Zregister(&zstd);
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace hdf5
#else
bool zstd_built() { return false; }
std::vector<unsigned char> zstd_encode(const unsigned char*, std::size_t, int) {
  throw IoError("this build of tessera has no zstd (libzstd)");
}
bool zstd_decode(const unsigned char*, std::size_t, std::vector<unsigned char>&, std::size_t) { return false; }
namespace hdf5 {
void register_zstd_filter() {}
}  // namespace hdf5
#endif

}  // namespace tessera::io
