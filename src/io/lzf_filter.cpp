#include "io/lzf_filter.hpp"

#include <hdf5.h>

#ifdef TESSERA_HAVE_LZF
#include <lzf.h>

#include <cerrno>
#include <cstdlib>
#endif

namespace tessera::io::hdf5 {

#ifdef TESSERA_HAVE_LZF
namespace {

constexpr H5Z_filter_t kLzf = 32000;

// HDF5's filter callback. Reading only (H5Z_FLAG_REVERSE): the chunk in `*buf` (`nbytes` long) is
// raw LZF; the writer recorded the chunk's uncompressed size in cd_values[2] (h5py's layout), so
// the output is that large, or grown until it fits where a writer left it out. Returns the
// decoded size, 0 on failure (HDF5 then fails the read, naming the filter).
size_t decode(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
  if ((flags & H5Z_FLAG_REVERSE) == 0) return 0;  // tessera never writes LZF
  size_t out_size = cd_nelmts >= 3 && cd_values[2] != 0 ? cd_values[2] : 4 * nbytes + 64;
  for (int attempt = 0; attempt < 8; ++attempt) {
    void* out = std::malloc(out_size);
    if (out == nullptr) return 0;
    const unsigned got = lzf_decompress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(out_size));
    if (got != 0) {
      std::free(*buf);
      *buf = out;
      *buf_size = out_size;
      return got;
    }
    std::free(out);
    if (errno != E2BIG) return 0;  // corrupt data (EINVAL)
    out_size *= 2;
  }
  return 0;
}

}  // namespace

void register_lzf_filter() {
  if (H5Zfilter_avail(kLzf) > 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  H5Eclear2(H5E_DEFAULT);
  static const H5Z_class2_t lzf = {H5Z_CLASS_T_VERS, kLzf,    1,     1, "lzf (tessera's decoder, liblzf)",
                                   nullptr,          nullptr, decode};
  (void)H5Zregister(&lzf);
  H5Eclear2(H5E_DEFAULT);
}
#else
void register_lzf_filter() {}
#endif

}  // namespace tessera::io::hdf5
