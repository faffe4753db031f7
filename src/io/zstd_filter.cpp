#include "io/zstd_filter.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "io/hdf5_library.hpp"

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
const char* zstd_library_version() { return ZSTD_versionString(); }

std::vector<unsigned char> zstd_encode(const unsigned char* in, std::size_t bytes, int level) {
  ZSTD_CCtx* c = contexts().c;
  // The frame carries its content's checksum (any Zstandard reader checks it): a damaged chunk is
  // refused rather than read as other values.
  std::size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, std::clamp(level, ZSTD_minCLevel(), kZstdMaxLevel));
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  if (ZSTD_isError(r)) throw IoError(std::string("setting up zstd failed: ") + ZSTD_getErrorName(r));
  std::vector<unsigned char> out(ZSTD_compressBound(bytes));
  const std::size_t got = ZSTD_compress2(c, out.data(), out.size(), in, bytes);
  if (ZSTD_isError(got)) throw IoError(std::string("compressing a chunk with zstd failed: ") + ZSTD_getErrorName(got));
  out.resize(got);
  return out;
}

namespace {

// The content size of `in` where it is one whole frame naming a size of at most `limit`.
std::optional<std::size_t> frame_size(const unsigned char* in, std::size_t bytes, std::size_t limit) {
  const unsigned long long size = ZSTD_getFrameContentSize(in, bytes);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > limit) return std::nullopt;
  if (ZSTD_findFrameCompressedSize(in, bytes) != bytes) return std::nullopt;  // one frame, nothing after it
  return static_cast<std::size_t>(size);
}

}  // namespace

bool zstd_decode(const unsigned char* in, std::size_t bytes, std::vector<unsigned char>& out, std::size_t limit) {
  const std::optional<std::size_t> size = frame_size(in, bytes, limit);
  if (!size) return false;
  out.resize(*size);
  const std::size_t got = ZSTD_decompressDCtx(contexts().d, out.data(), out.size(), in, bytes);
  return !ZSTD_isError(got) && got == *size;
}

namespace hdf5 {
namespace {

// HDF5's filter callback, both ways: `*buf` (`nbytes` long) replaced by a malloc'd buffer of the
// result; its size returned, 0 on failure (HDF5 then fails the read or write, naming the filter).
// Forward, cd_values[0] is the level (hdf5plugin's default 3 where none is given).
size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
  try {
    const auto* in = static_cast<const unsigned char*>(*buf);
    if (flags & H5Z_FLAG_REVERSE) {
      // A chunk is under 4 GiB in HDF5. The frame names its size, which a few bytes can claim
      // (zstd's blocks may repeat one byte 128 Ki times): the output grows with what is decoded,
      // from a few times the input, and never past the named size.
      const std::optional<std::size_t> size = frame_size(in, nbytes, std::size_t{0xffffffff});
      if (!size) return 0;
      std::size_t cap = std::min(*size, std::max<std::size_t>(std::size_t{1} << 20, 8 * nbytes));
      auto* out = static_cast<unsigned char*>(std::malloc(std::max<std::size_t>(cap, 1)));
      if (out == nullptr) return 0;
      ZSTD_DCtx* d = contexts().d;
      ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
      ZSTD_inBuffer src{in, nbytes, 0};
      ZSTD_outBuffer dst{out, cap, 0};
      for (;;) {
        const std::size_t r = ZSTD_decompressStream(d, &dst, &src);
        if (ZSTD_isError(r) || dst.pos > *size) break;
        if (r == 0) {  // the frame ended: all of it, to its named size
          if (src.pos != nbytes || dst.pos != *size) break;
          return hand_to_hdf5(buf, buf_size, out, cap, *size);
        }
        if (dst.pos == cap) {  // full: grow, at most to the named size
          if (cap == *size) break;
          const std::size_t grown = std::min(*size, 2 * cap);
          auto* more = static_cast<unsigned char*>(std::realloc(out, grown));
          if (more == nullptr) break;
          out = more, cap = grown;
          dst = {out, cap, dst.pos};
        } else if (src.pos == nbytes) {
          break;  // input used up before the frame ended
        }
      }
      std::free(out);
      return 0;
    }
    // The level as hdf5plugin stores it (an int, negative ones as large unsigned values; 0: the
    // default), clamped to zstd's range.
    const int asked = cd_nelmts > 0 ? static_cast<int>(cd_values[0]) : 0;
    return hand_to_hdf5(buf, buf_size, zstd_encode(in, nbytes, asked == 0 ? kZstdDefaultLevel : asked));
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
const char* zstd_library_version() { return ""; }
std::vector<unsigned char> zstd_encode(const unsigned char*, std::size_t, int) {
  throw IoError("this build of tessera has no zstd (libzstd)");
}
bool zstd_decode(const unsigned char*, std::size_t, std::vector<unsigned char>&, std::size_t) { return false; }
namespace hdf5 {
void register_zstd_filter() {}
}  // namespace hdf5
#endif

}  // namespace tessera::io
