#include "io/chunked_write.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.hpp"

#ifdef TESSERA_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

namespace tessera::io {

namespace {

// HDF5's shuffle filter (H5Z__filter_shuffle) over a whole chunk buffer: the elements' first
// bytes, then their second bytes, ...
std::vector<unsigned char> shuffled(const std::vector<unsigned char>& in, std::size_t esize) {
  std::vector<unsigned char> out(in.size());
  const std::size_t elements = in.size() / esize;
  for (std::size_t b = 0; b < esize; ++b) {
    unsigned char* dst = out.data() + b * elements;
    for (std::size_t i = 0; i < elements; ++i) dst[i] = in[i * esize + b];
  }
  return out;
}

// HDF5's deflate filter writes a zlib stream (compress2): the same format from libdeflate, with
// one compressor per thread and level, kept.
std::vector<unsigned char> deflated(const std::vector<unsigned char>& in, int level) {
#ifdef TESSERA_HAVE_LIBDEFLATE
  struct Compressor {
    libdeflate_compressor* c = nullptr;
    int level = 0;
    ~Compressor() { libdeflate_free_compressor(c); }
  };
  thread_local Compressor mine;
  if (mine.c == nullptr || mine.level != level) {
    libdeflate_free_compressor(mine.c);
    mine.c = libdeflate_alloc_compressor(level);
    mine.level = level;
    if (mine.c == nullptr) throw std::bad_alloc();
  }
  std::vector<unsigned char> out(libdeflate_zlib_compress_bound(mine.c, in.size()));
  const std::size_t got = libdeflate_zlib_compress(mine.c, in.data(), in.size(), out.data(), out.size());
  if (got == 0) throw IoError("compressing a chunk of C failed");
  out.resize(got);
#else
  uLongf got = compressBound(static_cast<uLong>(in.size()));
  std::vector<unsigned char> out(got);
  if (compress2(out.data(), &got, in.data(), static_cast<uLong>(in.size()), level) != Z_OK)
    throw IoError("compressing a chunk of C failed");
  out.resize(got);
#endif
  return out;
}

}  // namespace

ChunkedWriter::ChunkedWriter(std::int64_t rows, std::int64_t cols, std::int64_t chunk_rows, std::int64_t chunk_cols,
                             std::size_t esize, bool shuffle, int level)
    : rows_(rows),
      cols_(cols),
      chunk_rows_(chunk_rows),
      chunk_cols_(chunk_cols),
      esize_(esize),
      shuffle_(shuffle),
      level_(level) {
  if (rows < 1 || cols < 1 || chunk_rows < 1 || chunk_cols < 1 || esize == 0 || level < 1 || level > 9)
    throw std::invalid_argument("ChunkedWriter: bad shape, chunk, element size or level");
}

std::vector<unsigned char> ChunkedWriter::filter(const std::vector<unsigned char>& raw) const {
  return deflated(shuffle_ && esize_ > 1 ? shuffled(raw, esize_) : raw, level_);
}

void ChunkedWriter::add(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data,
                        int threads, const Store& store) {
  if (nrows <= 0 || ncols <= 0) return;
  if (row0 < 0 || col0 < 0 || row0 + nrows > rows_ || col0 + ncols > cols_)
    throw std::invalid_argument("ChunkedWriter::add: the block lies outside the dataset");
  const auto* src = static_cast<const unsigned char*>(data);
  struct Done {
    std::int64_t row0, col0;
    std::vector<unsigned char> bytes;  // raw, then filtered
  };
  std::vector<Done> done;
  // The finished chunks so far compressed by the pool (each worker takes the next; the first
  // failure stops them all), then stored in order on this thread.
  const auto flush = [&] {
    std::atomic<std::size_t> next{0};
    std::mutex failing;
    std::exception_ptr failed;
    const auto work = [&] {
      try {
        for (std::size_t t; (t = next.fetch_add(1)) < done.size();) done[t].bytes = filter(done[t].bytes);
      } catch (...) {
        const std::lock_guard<std::mutex> hold(failing);
        if (!failed) failed = std::current_exception();
        next = done.size();
      }
    };
    std::vector<std::thread> pool;
    const int helpers = std::min<int>(threads, static_cast<int>(done.size())) - 1;
    for (int t = 0; t < helpers; ++t) {
      try {
        pool.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // those that started (or this thread alone) share the chunks
      }
    }
    work();
    for (auto& th : pool) th.join();
    if (failed) std::rethrow_exception(failed);
    for (const Done& d : done) store(d.row0, d.col0, d.bytes);
    done.clear();
  };
  // At most this many finished chunks wait for the pool: enough work for every thread, memory
  // bounded by a few chunks per thread whatever the block's size.
  const std::size_t batch = static_cast<std::size_t>(std::max(1, threads)) * 4;
  const std::int64_t j0 = col0 / chunk_cols_, j1 = (col0 + ncols - 1) / chunk_cols_;
  for (std::int64_t i = row0 / chunk_rows_; i <= (row0 + nrows - 1) / chunk_rows_; ++i) {
    const std::int64_t r0 = std::max(row0, i * chunk_rows_), r1 = std::min(row0 + nrows, (i + 1) * chunk_rows_);
    for (std::int64_t j = j0; j <= j1; ++j) {
      // The block's part of chunk (i, j) copied in; a chunk it finishes goes to the pool.
      const std::int64_t c0 = std::max(col0, j * chunk_cols_), c1 = std::min(col0 + ncols, (j + 1) * chunk_cols_);
      Waiting& w = waiting_[{i, j}];
      if (w.raw.empty()) w.raw.assign(static_cast<std::size_t>(chunk_rows_ * chunk_cols_) * esize_, 0);
      for (std::int64_t r = r0; r < r1; ++r)
        std::memcpy(w.raw.data() +
                        static_cast<std::size_t>((r - i * chunk_rows_) * chunk_cols_ + (c0 - j * chunk_cols_)) * esize_,
                    src + static_cast<std::size_t>((r - row0) * ncols + (c0 - col0)) * esize_,
                    static_cast<std::size_t>(c1 - c0) * esize_);
      w.filled += (r1 - r0) * (c1 - c0);
      const std::int64_t inside = (std::min(rows_, (i + 1) * chunk_rows_) - i * chunk_rows_) *
                                  (std::min(cols_, (j + 1) * chunk_cols_) - j * chunk_cols_);
      if (w.filled > inside) throw std::logic_error("ChunkedWriter::add: an element of C arrived twice");
      if (w.filled == inside) {
        done.push_back({i * chunk_rows_, j * chunk_cols_, std::move(w.raw)});
        waiting_.erase({i, j});
        if (done.size() >= batch) flush();
      }
    }
  }
  if (!done.empty()) flush();
}

}  // namespace tessera::io
