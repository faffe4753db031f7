#include "io/chunked_write.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "io/lz4_filter.hpp"
#include "io/zstd_filter.hpp"

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

// Chunks filtered by helper threads (the one pool of this file: add() and compress_inside()) and
// handed to `store` on the owner's thread in the order they were pushed, while the later ones are
// still being filtered: storing (HDF5, one thread) overlaps filtering instead of waiting for a whole
// batch. At most `window` chunks are in flight (memory: a few chunks per thread); a full window
// makes the owner filter one itself, or wait, then store. The owner is the only thread that
// stores; a failure of a helper or of `store` stops the helpers and is rethrown on the owner's
// thread.
template <class Filter, class StoreFn>
class OrderedFilter {
 public:
  OrderedFilter(int threads, const Filter& filter, const StoreFn& store)
      : filter_(filter), store_(store), window_(static_cast<std::size_t>(std::max(1, threads)) * 4) {
    for (int t = 1; t < threads; ++t) {
      try {
        helpers_.emplace_back([this] { help(); });
      } catch (const std::system_error&) {
        break;  // those that started (or the owner alone) share the chunks
      }
    }
  }
  ~OrderedFilter() { stop(); }
  OrderedFilter(const OrderedFilter&) = delete;
  OrderedFilter& operator=(const OrderedFilter&) = delete;

  // A finished chunk (raw bytes) joins the queue; stores what is ready in order.
  void push(std::int64_t row0, std::int64_t col0, std::vector<unsigned char> raw) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      slots_.push_back(Slot{row0, col0, std::move(raw), false, false});
    }
    work_.notify_one();
    const std::size_t size = slots_size();
    drain(size >= window_ ? size - window_ + 1 : 0);
  }
  // Every chunk pushed filtered and stored.
  void finish() { drain(slots_size()); }

 private:
  struct Slot {
    std::int64_t row0, col0;
    std::vector<unsigned char> bytes;  // raw, then filtered
    bool taken, ready;
  };

  std::size_t slots_size() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return slots_.size();
  }

  // Claims the first unclaimed slot (under the lock); nullptr when none.
  Slot* claim() {
    for (Slot& s : slots_)
      if (!s.taken) {
        s.taken = true;
        return &s;
      }
    return nullptr;
  }

  // Filters a claimed slot outside the lock (deque elements stay put while others are pushed
  // at the back or popped from the front, and a slot is popped only once ready).
  void filter_slot(Slot* s, std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    std::vector<unsigned char> out;
    std::exception_ptr error;
    try {
      out = filter_(s->bytes);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) {
      if (!failed_) failed_ = error;
      stopping_ = true;
      work_.notify_all();
    } else {
      s->bytes = std::move(out);
    }
    s->ready = true;
    done_.notify_all();
  }

  void help() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Slot* s = nullptr;
      work_.wait(lock, [&] { return stopping_ || (s = claim()) != nullptr; });
      if (s == nullptr) return;  // stopping
      filter_slot(s, lock);
    }
  }

  // Stores chunks from the front, in order: at least `count` of them (filtering one itself when
  // the front is not ready and one is unclaimed, else waiting), then any that are ready.
  void drain(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (std::size_t stored = 0; !failed_ && !slots_.empty();) {
      if (slots_.front().ready) {
        Slot s = std::move(slots_.front());
        slots_.pop_front();
        lock.unlock();
        store_(s.row0, s.col0, s.bytes);  // may throw: the destructor stops the helpers
        lock.lock();
        ++stored;
      } else if (stored >= count) {
        break;
      } else if (Slot* mine = claim()) {
        filter_slot(mine, lock);
      } else {
        done_.wait(lock, [&] { return failed_ || slots_.front().ready; });
      }
    }
    if (failed_) {
      const std::exception_ptr error = failed_;
      lock.unlock();
      stop();
      std::rethrow_exception(error);
    }
  }

  void stop() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& th : helpers_)
      if (th.joinable()) th.join();
  }

  const Filter& filter_;
  const StoreFn& store_;
  const std::size_t window_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<Slot> slots_;
  bool stopping_ = false;
  std::exception_ptr failed_;
  std::vector<std::thread> helpers_;
};

template <class T>
void put(std::vector<unsigned char>& out, T v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

}  // namespace

std::int64_t chunks_tiling(const ChunkLayout& layout, std::int64_t row0, std::int64_t col0, std::int64_t nrows,
                           std::int64_t ncols) {
  if (layout.chunk_rows < 1 || layout.chunk_cols < 1 || nrows < 1 || ncols < 1 || row0 < 0 || col0 < 0 ||
      row0 + nrows > layout.rows || col0 + ncols > layout.cols)
    return 0;
  // One dimension: [begin, begin + size) starts a chunk and ends one (or the dataset).
  const auto whole = [](std::int64_t begin, std::int64_t size, std::int64_t chunk, std::int64_t extent) {
    return begin % chunk == 0 && ((begin + size) % chunk == 0 || begin + size == extent);
  };
  if (!whole(row0, nrows, layout.chunk_rows, layout.rows) || !whole(col0, ncols, layout.chunk_cols, layout.cols))
    return 0;
  return ((nrows + layout.chunk_rows - 1) / layout.chunk_rows) * ((ncols + layout.chunk_cols - 1) / layout.chunk_cols);
}

std::vector<unsigned char> pack(const std::vector<CompressedChunk>& chunks) {
  std::vector<unsigned char> out;
  put<std::uint64_t>(out, chunks.size());
  for (const CompressedChunk& c : chunks) {
    put<std::int64_t>(out, c.row0);
    put<std::int64_t>(out, c.col0);
    put<std::uint64_t>(out, c.bytes.size());
    out.insert(out.end(), c.bytes.begin(), c.bytes.end());
  }
  return out;
}

std::vector<CompressedChunk> unpack(const std::vector<unsigned char>& message) {
  std::size_t at = 0;
  const auto take = [&](void* into, std::size_t n) {
    if (n > message.size() - at) throw IoError("a message of compressed chunks of C ends early");
    std::memcpy(into, message.data() + at, n);
    at += n;
  };
  std::uint64_t count = 0;
  take(&count, sizeof count);
  if (count > message.size()) throw IoError("a message of compressed chunks of C is malformed");
  std::vector<CompressedChunk> chunks(static_cast<std::size_t>(count));
  for (CompressedChunk& c : chunks) {
    std::uint64_t bytes = 0;
    take(&c.row0, sizeof c.row0);
    take(&c.col0, sizeof c.col0);
    take(&bytes, sizeof bytes);
    if (bytes > message.size() - at) throw IoError("a message of compressed chunks of C ends early");
    c.bytes.assign(message.begin() + static_cast<std::ptrdiff_t>(at),
                   message.begin() + static_cast<std::ptrdiff_t>(at + bytes));
    at += static_cast<std::size_t>(bytes);
  }
  if (at != message.size()) throw IoError("a message of compressed chunks of C has bytes past its end");
  return chunks;
}

bool codec_built(Codec codec) {
  return codec == Codec::deflate || (codec == Codec::lz4 && lz4_built()) || (codec == Codec::zstd && zstd_built());
}

ChunkedWriter::ChunkedWriter(std::int64_t rows, std::int64_t cols, std::int64_t chunk_rows, std::int64_t chunk_cols,
                             std::size_t esize, bool shuffle, int level, Codec codec)
    : rows_(rows),
      cols_(cols),
      chunk_rows_(chunk_rows),
      chunk_cols_(chunk_cols),
      esize_(esize),
      shuffle_(shuffle),
      level_(level),
      codec_(codec) {
  const int top = codec == Codec::zstd ? kZstdMaxLevel : codec == Codec::lz4 ? 1 : 9;
  if (rows < 1 || cols < 1 || chunk_rows < 1 || chunk_cols < 1 || esize == 0 || level < 1 || level > top)
    throw std::invalid_argument("ChunkedWriter: bad shape, chunk, element size or level");
  if (!codec_built(codec)) throw std::invalid_argument("ChunkedWriter: this build lacks the codec's library");
  if (codec == Codec::lz4 &&
      static_cast<double>(chunk_rows) * static_cast<double>(chunk_cols) * static_cast<double>(esize) >= 2147483648.0)
    throw std::invalid_argument("ChunkedWriter: LZ4 takes chunks under 2 GiB");
}

std::vector<unsigned char> ChunkedWriter::filter(const std::vector<unsigned char>& raw) const {
  std::vector<unsigned char> rearranged;  // raw itself unless shuffled (no copy)
  if (shuffle_ && esize_ > 1) rearranged = shuffled(raw, esize_);
  const std::vector<unsigned char>& in = rearranged.empty() ? raw : rearranged;
  if (codec_ == Codec::lz4) return lz4_encode(in.data(), in.size());
  if (codec_ == Codec::zstd) return zstd_encode(in.data(), in.size(), level_);
  return deflated(in, level_);
}

void ChunkedWriter::add(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data,
                        int threads, const Store& store) {
  if (nrows <= 0 || ncols <= 0) return;
  if (row0 < 0 || col0 < 0 || row0 + nrows > rows_ || col0 + ncols > cols_)
    throw std::invalid_argument("ChunkedWriter::add: the block lies outside the dataset");
  const auto* src = static_cast<const unsigned char*>(data);
  // Finished chunks are filtered by the pool while this thread copies the next ones in and stores
  // the filtered ones in order (OrderedFilter).
  const auto filter_one = [this](const std::vector<unsigned char>& raw) { return filter(raw); };
  OrderedFilter<decltype(filter_one), Store> pipeline(threads, filter_one, store);
  const std::int64_t j0 = col0 / chunk_cols_, j1 = (col0 + ncols - 1) / chunk_cols_;
  for (std::int64_t i = row0 / chunk_rows_; i <= (row0 + nrows - 1) / chunk_rows_; ++i) {
    const std::int64_t r0 = std::max(row0, i * chunk_rows_), r1 = std::min(row0 + nrows, (i + 1) * chunk_rows_);
    for (std::int64_t j = j0; j <= j1; ++j) {
      // The block's part of chunk (i, j) copied in; a chunk it finishes goes to the pool.
      const std::int64_t c0 = std::max(col0, j * chunk_cols_), c1 = std::min(col0 + ncols, (j + 1) * chunk_cols_);
      if (stored_.count({i, j})) continue;  // compressed and stored as another rank sent it
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
        std::vector<unsigned char> raw = std::move(w.raw);
        waiting_.erase({i, j});
        pipeline.push(i * chunk_rows_, j * chunk_cols_, std::move(raw));
      }
    }
  }
  pipeline.finish();
}

void ChunkedWriter::mark_stored(std::int64_t row0, std::int64_t col0) {
  if (row0 < 0 || col0 < 0 || row0 >= rows_ || col0 >= cols_ || row0 % chunk_rows_ != 0 || col0 % chunk_cols_ != 0)
    throw std::invalid_argument("ChunkedWriter::mark_stored: no chunk starts there");
  const std::pair<std::int64_t, std::int64_t> index{row0 / chunk_rows_, col0 / chunk_cols_};
  if (waiting_.count(index) || !stored_.insert(index).second)
    throw std::logic_error("ChunkedWriter::mark_stored: the chunk was written already");
}

std::vector<CompressedChunk> ChunkedWriter::compress_inside(std::int64_t row0, std::int64_t col0, std::int64_t nrows,
                                                            std::int64_t ncols, const void* data, int threads) const {
  std::vector<CompressedChunk> chunks;
  if (nrows <= 0 || ncols <= 0) return chunks;
  if (row0 < 0 || col0 < 0 || row0 + nrows > rows_ || col0 + ncols > cols_)
    throw std::invalid_argument("ChunkedWriter::compress_inside: the block lies outside the dataset");
  const auto* src = static_cast<const unsigned char*>(data);
  // Each chunk copied out, then filtered by the pool while the next are copied (OrderedFilter,
  // which hands them back in order).
  const auto filter_one = [this](const std::vector<unsigned char>& raw) { return filter(raw); };
  const auto keep = [&chunks](std::int64_t r0, std::int64_t c0, std::vector<unsigned char>& bytes) {
    chunks.push_back({r0, c0, std::move(bytes)});
  };
  OrderedFilter<decltype(filter_one), decltype(keep)> pipeline(threads, filter_one, keep);
  // Chunk i's rows within the dataset: [i * chunk_rows_, min(rows_, (i + 1) * chunk_rows_)).
  const std::int64_t i0 = (row0 + chunk_rows_ - 1) / chunk_rows_, j0 = (col0 + chunk_cols_ - 1) / chunk_cols_;
  for (std::int64_t i = i0; i * chunk_rows_ < row0 + nrows; ++i) {
    const std::int64_t r1 = std::min(rows_, (i + 1) * chunk_rows_);
    if (r1 > row0 + nrows) break;
    for (std::int64_t j = j0; j * chunk_cols_ < col0 + ncols; ++j) {
      const std::int64_t c1 = std::min(cols_, (j + 1) * chunk_cols_);
      if (c1 > col0 + ncols) break;
      const std::int64_t cr0 = i * chunk_rows_, cc0 = j * chunk_cols_;
      std::vector<unsigned char> raw(static_cast<std::size_t>(chunk_rows_ * chunk_cols_) * esize_, 0);
      for (std::int64_t r = cr0; r < r1; ++r)
        std::memcpy(raw.data() + static_cast<std::size_t>((r - cr0) * chunk_cols_) * esize_,
                    src + static_cast<std::size_t>((r - row0) * ncols + (cc0 - col0)) * esize_,
                    static_cast<std::size_t>(c1 - cc0) * esize_);
      pipeline.push(cr0, cc0, std::move(raw));
    }
  }
  pipeline.finish();
  return chunks;
}

}  // namespace tessera::io
