#include "job/read_ahead.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <vector>

#include "core/log.hpp"
#include "io/direct_io.hpp"

namespace tessera::job {

namespace {

// Pieces of about 32 MiB (as a staged GEMM reads): stop() waits for one at most, and each is
// read by several threads (io/direct_io.hpp).
constexpr std::size_t kPieceBytes = std::size_t{32} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

void ReadAhead::start(const io::Operand& op, std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
                      DType dtype, std::size_t cap, bool whole) {
  if (thread_.joinable() || rows <= 0 || cols <= 0) return;
  whole_ = whole;
  row_bytes_ = static_cast<std::size_t>(cols) * dtype_size(dtype);
  const std::int64_t fit = std::min<std::int64_t>(rows, static_cast<std::int64_t>(cap / row_bytes_));
  if (fit <= 0) return;
  // In 2 MiB pages where the kernel has them (fewer page faults as the rows arrive).
  const std::size_t bytes = (static_cast<std::size_t>(fit) * row_bytes_ + kHugePage - 1) / kHugePage * kHugePage;
  rows_.reset(static_cast<unsigned char*>(std::aligned_alloc(kHugePage, bytes)));
  if (!rows_) return;  // no memory to spare: the reads go on as before
#ifdef MADV_HUGEPAGE
  (void)::madvise(rows_.get(), bytes, MADV_HUGEPAGE);
#endif
  try {
    thread_ = std::thread([this, op, row0, fit, col0, cols, dtype] { read_pieces(op, row0, fit, col0, cols, dtype); });
  } catch (const std::system_error&) {
    rows_.reset();
  }
}

void ReadAhead::read_pieces(io::Operand op, std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
                            DType dtype) {
  const auto began = std::chrono::steady_clock::now();
  const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(kPieceBytes / row_bytes_));
  try {
    for (std::int64_t r = 0; r < rows && !stopping_.load(); r += step) {
      const std::int64_t count = std::min(step, rows - r);
      io::read_operand_block(op, row0 + r, count, col0, cols, dtype, rows_.get() + static_cast<std::size_t>(r) * row_bytes_);
      held_.store(r + count);
    }
  } catch (const std::exception& e) {
    // The rows not held are read again by the job's own read, which reports the failure.
    log::info(std::string("reading B ahead stopped: ") + e.what());
  }
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

void ReadAhead::Free::operator()(unsigned char* p) const { std::free(p); }

void ReadAhead::drop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  held_.store(0);
  rows_.reset();
}

std::int64_t ReadAhead::stop() {
  if (!whole_) stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  return held_.load();
}

std::int64_t ReadAhead::serve(std::int64_t row0, std::int64_t rows, void* into) const {
  const std::int64_t held = held_.load();
  if (row0 < 0 || row0 >= held || rows <= 0) return 0;
  const std::int64_t n = std::min(rows, held - row0);
  const std::size_t bytes = static_cast<std::size_t>(n) * row_bytes_;
  const unsigned char* from = rows_.get() + static_cast<std::size_t>(row0) * row_bytes_;
  auto* to = static_cast<unsigned char*>(into);
  // A large copy on a few threads (one per 16 MiB, at most the reader threads).
  const auto threads =
      static_cast<int>(std::clamp<std::size_t>(bytes >> 24, 1, static_cast<std::size_t>(io::io_threads())));
  const auto part = [&](int t) {
    const std::size_t b0 = bytes * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
    const std::size_t b1 = bytes * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
    std::memcpy(to + b0, from + b0, b1 - b0);
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
  } catch (const std::system_error&) {
    for (int t = static_cast<int>(pool.size()) + 1; t < threads; ++t) part(t);
  }
  part(0);
  for (auto& th : pool) th.join();
  return n;
}

}  // namespace tessera::job
