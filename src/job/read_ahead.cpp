#include "job/read_ahead.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

#include "backend/backend.hpp"
#include "core/env.hpp"
#include "io/direct_io.hpp"

namespace tessera::job {

namespace {

bool forced() {
  const auto word = env::word("TESSERA_READ_AHEAD");
  return word && *word == "force";
}

}  // namespace

ReadAhead::~ReadAhead() {
  stop();
  release();
  if (releaser_.joinable()) releaser_.join();
}

bool ReadAhead::wanted() {
  const auto word = env::word("TESSERA_READ_AHEAD");
  if (word && *word == "0") return false;
  return forced() || backend::gpu_start_pending();
}

std::size_t ReadAhead::default_bound() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::size_t memory = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
  return std::min(std::size_t{1} << 30, memory / 16);
}

void ReadAhead::start(RowRead read, std::int64_t rows, std::size_t row_bytes, std::size_t max_bytes) {
  if (rows <= 0 || row_bytes == 0 || max_bytes < row_bytes || thread_.joinable()) return;
  to_the_end_ = forced();
  row_bytes_ = row_bytes;
  piece_rows_ = backend::stage_piece_rows(row_bytes);
  std::int64_t limit = std::min(rows, static_cast<std::int64_t>(max_bytes / row_bytes));
  if (to_the_end_) limit = (limit + 1) / 2;  // forced (tests): the rest is read as before
  thread_ = std::thread([this, read = std::move(read), limit] {
    try {
      for (std::int64_t r = 0; r < limit && !stop_.load(); r += piece_rows_) {
        const std::int64_t n = std::min(piece_rows_, limit - r);
        std::unique_ptr<unsigned char[]> piece(new unsigned char[static_cast<std::size_t>(n) * row_bytes_]);
        read(r, n, piece.get());
        pieces_.push_back(std::move(piece));
        ready_rows_ = r + n;
      }
    } catch (...) {
      // This piece and those after it are read again by the job, which meets the failure there.
    }
  });
}

void ReadAhead::stop() {
  if (!thread_.joinable()) return;
  if (!to_the_end_) stop_.store(true);
  thread_.join();
}

void ReadAhead::copy_rows(std::int64_t row0, std::int64_t rows, unsigned char* into) const {
  const auto copy = [this, into, row0](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end;) {
      const std::int64_t piece = r / piece_rows_, within = r % piece_rows_;
      const std::int64_t n = std::min(end - r, piece_rows_ - within);
      std::memcpy(into + static_cast<std::size_t>(r - row0) * row_bytes_,
                  pieces_[static_cast<std::size_t>(piece)].get() + static_cast<std::size_t>(within) * row_bytes_,
                  static_cast<std::size_t>(n) * row_bytes_);
      r += n;
    }
  };
  // A few threads, 8 MiB or more each: one thread copies ~8 GB/s, the page-locked buffer takes more.
  const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes_;
  const auto threads = static_cast<std::int64_t>(
      std::clamp<std::size_t>(bytes >> 23, 1, static_cast<std::size_t>(std::max(1, std::min(io::io_threads(), 8)))));
  const std::int64_t per = (rows + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads && t * per < rows; ++t) {
    try {
      pool.emplace_back(copy, row0 + t * per, row0 + std::min(rows, (t + 1) * per));
    } catch (const std::system_error&) {
      copy(row0 + t * per, row0 + std::min(rows, (t + 1) * per));
    }
  }
  copy(row0, row0 + std::min(rows, per));
  for (auto& th : pool) th.join();
}

void ReadAhead::release() {
  if (pieces_.empty()) return;
  if (releaser_.joinable()) releaser_.join();
  // Freed on a thread: giving back a GiB of pages takes a tenth of a second the GEMM need not wait.
  try {
    releaser_ = std::thread([pieces = std::move(pieces_)]() mutable { pieces.clear(); });
  } catch (const std::system_error&) {
    pieces_.clear();
  }
  pieces_.clear();
  ready_rows_ = 0;
}

RowRead ReadAhead::serving(RowRead read) {
  if (ready_rows_ == 0) return read;
  return [this, read = std::move(read)](std::int64_t row0, std::int64_t rows, void* into) {
    auto* out = static_cast<unsigned char*>(into);
    const std::int64_t served = row0 < ready_rows_ ? std::min(rows, ready_rows_ - row0) : 0;
    if (served > 0) copy_rows(row0, served, out);
    if (served > 0 && row0 + served >= ready_rows_) release();  // the last row read ahead is served
    if (served < rows) read(row0 + served, rows - served, out + static_cast<std::size_t>(served) * row_bytes_);
  };
}

}  // namespace tessera::job
