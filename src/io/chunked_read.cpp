#include "io/chunked_read.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.hpp"

#ifdef TESSERA_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

namespace tessera::io {

namespace {

std::atomic<int> g_read_threads{0};

// Closes an HDF5 identifier on the way out; errors ignored (the plan is only a read-only look-up).
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

std::string home_file_name(hid_t dset) {
  const Id file{H5Iget_file_id(dset), H5Fclose};
  if (file.id < 0) return {};
  const ssize_t n = H5Fget_name(file.id, nullptr, 0);
  if (n <= 0) return {};
  std::string name(static_cast<std::size_t>(n), '\0');
  if (H5Fget_name(file.id, name.data(), name.size() + 1) < 0) return {};
  return name;
}

// Stored as native float32 or float64 (same byte order as this machine): bytes per element, or 0.
std::size_t native_float_size(hid_t dset) {
  const Id type{H5Dget_type(dset), H5Tclose};
  if (type.id < 0) return 0;
  if (H5Tequal(type.id, H5T_NATIVE_FLOAT) > 0) return 4;
  if (H5Tequal(type.id, H5T_NATIVE_DOUBLE) > 0) return 8;
  return 0;
}

// The filters in write order, or false when one of them is not deflate or shuffle.
bool known_filters(hid_t dcpl, std::vector<ChunkedPlan::Filter>& filters) {
  const int n = H5Pget_nfilters(dcpl);
  if (n < 0) return false;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 0;
    char name[64] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, nullptr, sizeof name, name, &config);
    if (id == H5Z_FILTER_DEFLATE)
      filters.push_back(ChunkedPlan::Filter::deflate);
    else if (id == H5Z_FILTER_SHUFFLE)
      filters.push_back(ChunkedPlan::Filter::shuffle);
    else
      return false;
  }
  return true;
}

// A plain POSIX file with no user block: chunk addresses are byte offsets into it.
bool plain_file(hid_t dset) {
  const Id file{H5Iget_file_id(dset), H5Fclose};
  if (file.id < 0) return false;
  const Id fapl{H5Fget_access_plist(file.id), H5Pclose};
  const Id fcpl{H5Fget_create_plist(file.id), H5Pclose};
  hsize_t userblock = 0;
  return fapl.id >= 0 && fcpl.id >= 0 && H5Pget_driver(fapl.id) == H5FD_SEC2 &&
         H5Pget_userblock(fcpl.id, &userblock) >= 0 && userblock == 0;
}

std::int64_t floor_to(std::int64_t v, std::int64_t step) { return v / step * step; }

// Undoes HDF5's shuffle filter: the stored bytes are grouped by byte position (all first bytes of
// the elements, then all second bytes, ...).
void unshuffle(const unsigned char* in, unsigned char* out, std::size_t elements, std::size_t esize) {
  for (std::size_t b = 0; b < esize; ++b) {
    const unsigned char* src = in + b * elements;
    for (std::size_t i = 0; i < elements; ++i) out[i * esize + b] = src[i];
  }
}

// One worker's decompression state and buffers, reused across its chunks.
class Inflater {
 public:
  Inflater() {
#ifdef TESSERA_HAVE_LIBDEFLATE
    d_ = libdeflate_alloc_decompressor();
    if (d_ == nullptr) throw std::bad_alloc();
#endif
  }
  ~Inflater() {
#ifdef TESSERA_HAVE_LIBDEFLATE
    libdeflate_free_decompressor(d_);
#endif
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // zlib stream `in` -> exactly `out_bytes` bytes at `out`. False when it is corrupt or of
  // another size.
  bool inflate(const unsigned char* in, std::size_t in_bytes, unsigned char* out, std::size_t out_bytes) {
#ifdef TESSERA_HAVE_LIBDEFLATE
    std::size_t got = 0;
    return libdeflate_zlib_decompress(d_, in, in_bytes, out, out_bytes, &got) == LIBDEFLATE_SUCCESS &&
           got == out_bytes;
#else
    uLongf got = static_cast<uLongf>(out_bytes);
    return ::uncompress(out, &got, in, static_cast<uLong>(in_bytes)) == Z_OK && got == out_bytes;
#endif
  }

 private:
#ifdef TESSERA_HAVE_LIBDEFLATE
  libdeflate_decompressor* d_ = nullptr;
#endif
};

// Copies the part of a decoded chunk (chunk_rows x chunk_cols of `stored` bytes, at (r0, c0) of
// the dataset) that lies in the requested block into `out`, converting float32 to float64 where
// asked.
void place(const ChunkedPlan& p, const ChunkedPlan::Chunk& ch, const unsigned char* chunk, std::int64_t row0,
           std::int64_t nrows, std::int64_t col0, std::int64_t ncols, DType as, unsigned char* out) {
  const std::int64_t r_begin = std::max(ch.row0, row0), r_end = std::min(ch.row0 + p.chunk_rows, row0 + nrows);
  const std::int64_t c_begin = std::max(ch.col0, col0), c_end = std::min(ch.col0 + p.chunk_cols, col0 + ncols);
  const std::size_t out_size = dtype_size(as);
  const auto width = static_cast<std::size_t>(c_end - c_begin);
  for (std::int64_t r = r_begin; r < r_end; ++r) {
    const unsigned char* src =
        chunk + static_cast<std::size_t>((r - ch.row0) * p.chunk_cols + (c_begin - ch.col0)) * p.stored_size;
    unsigned char* dst = out + static_cast<std::size_t>((r - row0) * ncols + (c_begin - col0)) * out_size;
    if (p.stored_size == out_size) {
      std::memcpy(dst, src, width * out_size);
    } else if (p.stored_size == 4) {  // float32 stored, float64 wanted
      for (std::size_t i = 0; i < width; ++i) {
        float v;
        std::memcpy(&v, src + 4 * i, 4);
        const double d = v;
        std::memcpy(dst + 8 * i, &d, 8);
      }
    } else {  // float64 stored, float32 wanted: rounded as HDF5's conversion would
      for (std::size_t i = 0; i < width; ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        const auto f = static_cast<float>(v);
        std::memcpy(dst + 4 * i, &f, 4);
      }
    }
  }
}

// pread of exactly `bytes` at `offset`; 0, errno, or -1 when the file ends first.
int read_exact(int fd, unsigned char* to, std::size_t bytes, std::int64_t offset) {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, to, bytes, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    to += got;
    bytes -= static_cast<std::size_t>(got);
    offset += got;
  }
  return 0;
}

}  // namespace

int read_threads() {
  if (const char* env = std::getenv("TESSERA_IO_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
  }
  if (const int set = g_read_threads.load(); set > 0) return set;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void set_read_threads(int threads) { g_read_threads.store(std::max(0, threads)); }

const char* inflate_library() {
#ifdef TESSERA_HAVE_LIBDEFLATE
  return "libdeflate";
#else
  return "zlib";
#endif
}

std::optional<ChunkedPlan> plan_chunked_read(hid_t dset, const std::string& where, std::int64_t row0,
                                             std::int64_t nrows, std::int64_t col0, std::int64_t ncols, DType as) {
  const Id dcpl{H5Dget_create_plist(dset), H5Pclose};
  if (dcpl.id < 0 || H5Pget_layout(dcpl.id) != H5D_CHUNKED || H5Pget_external_count(dcpl.id) != 0) return {};
  ChunkedPlan p;
  p.stored_size = native_float_size(dset);
  if (p.stored_size == 0 || !known_filters(dcpl.id, p.filters) || !plain_file(dset)) return {};
  hsize_t chunk[2] = {0, 0};
  if (H5Pget_chunk(dcpl.id, 2, chunk) != 2) return {};
  const Id space{H5Dget_space(dset), H5Sclose};
  hsize_t dims[2] = {0, 0};
  if (space.id < 0 || H5Sget_simple_extent_dims(space.id, dims, nullptr) != 2) return {};
  p.file = home_file_name(dset);
  if (p.file.empty()) return {};
  p.rows = static_cast<std::int64_t>(dims[0]);
  p.cols = static_cast<std::int64_t>(dims[1]);
  p.chunk_rows = static_cast<std::int64_t>(chunk[0]);
  p.chunk_cols = static_cast<std::int64_t>(chunk[1]);
  (void)as;  // float32 and float64 convert both ways in place()

  for (std::int64_t r = floor_to(row0, p.chunk_rows); r < row0 + nrows; r += p.chunk_rows)
    for (std::int64_t c = floor_to(col0, p.chunk_cols); c < col0 + ncols; c += p.chunk_cols) {
      const hsize_t offset[2] = {static_cast<hsize_t>(r), static_cast<hsize_t>(c)};
      unsigned mask = 0;
      haddr_t addr = HADDR_UNDEF;
      hsize_t size = 0;
      if (H5Dget_chunk_info_by_coord(dset, offset, &mask, &addr, &size) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return {};  // HDF5 will tell what is wrong
      }
      if (addr == HADDR_UNDEF || size == 0)
        throw InputError("'" + where + "' has a chunk that was never written (rows " + std::to_string(r) + ".., cols " +
                         std::to_string(c) + "..): HDF5 would read it as the fill value, which is not data the file " +
                         "holds; write the whole dataset first");
      p.chunks.push_back({r, c, static_cast<std::int64_t>(addr), static_cast<std::int64_t>(size), mask});
    }
  return p;
}

void read_chunked(const ChunkedPlan& p, const std::string& where, std::int64_t row0, std::int64_t nrows,
                  std::int64_t col0, std::int64_t ncols, DType as, void* out) {
  const int fd = ::open(p.file.c_str(), O_RDONLY);
  if (fd < 0) throw IoError("cannot open '" + p.file + "': " + std::strerror(errno));
  const std::size_t raw_bytes = static_cast<std::size_t>(p.chunk_rows * p.chunk_cols) * p.stored_size;
  const auto threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(read_threads()), p.chunks.size()));
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::string failure;
  const auto fail = [&](std::string why) {
    const std::lock_guard<std::mutex> hold(failure_mutex);
    if (failure.empty()) failure = std::move(why);
    next.store(p.chunks.size());  // the others stop at their next chunk
  };
  const auto work = [&] {
    try {
      Inflater inflater;
      std::vector<unsigned char> stored, a(raw_bytes), b(raw_bytes);
      for (std::size_t i = next++; i < p.chunks.size(); i = next++) {
        const auto& ch = p.chunks[i];
        stored.resize(static_cast<std::size_t>(ch.bytes));
        if (const int rc = read_exact(fd, stored.data(), stored.size(), ch.addr)) {
          fail("reading '" + where + "' failed: " + (rc > 0 ? std::strerror(rc) : "the file ends early (truncated?)"));
          return;
        }
        // Undo the filters in reverse order of writing; `cur` is where the bytes are now.
        const unsigned char* cur = stored.data();
        std::size_t cur_bytes = stored.size();
        for (std::size_t f = p.filters.size(); f-- > 0;) {
          if (ch.filter_mask & (1u << f)) continue;  // this filter was skipped for this chunk
          unsigned char* dst = cur == a.data() ? b.data() : a.data();
          if (p.filters[f] == ChunkedPlan::Filter::deflate) {
            if (!inflater.inflate(cur, cur_bytes, dst, raw_bytes)) {
              fail("'" + where + "' has a chunk (rows " + std::to_string(ch.row0) + ".., cols " +
                   std::to_string(ch.col0) + "..) that does not decompress: the file is corrupt");
              return;
            }
          } else {
            if (cur_bytes != raw_bytes) {
              fail("'" + where + "' has a chunk of an unexpected size: the file is corrupt");
              return;
            }
            unshuffle(cur, dst, raw_bytes / p.stored_size, p.stored_size);
          }
          cur = dst;
          cur_bytes = raw_bytes;
        }
        if (cur_bytes != raw_bytes) {
          fail("'" + where + "' has a chunk of an unexpected size: the file is corrupt");
          return;
        }
        place(p, ch, cur, row0, nrows, col0, ncols, as, static_cast<unsigned char*>(out));
      }
    } catch (const std::exception& e) {
      fail(std::string("reading '") + where + "' failed: " + e.what());
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // no more threads: those started and this one share the chunks
  }
  work();
  for (auto& th : pool) th.join();
  ::close(fd);
  if (!failure.empty()) throw IoError(failure);
}

}  // namespace tessera::io
