#include "algorithms/row_streams.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/env.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int stream_chunks(std::size_t a_block_bytes) {
  if (const auto n = env::whole("TESSERA_STREAM_CHUNKS")) return static_cast<int>(*n);
  return a_block_bytes >= kStreamMinBytes ? kStreamChunks : 1;
}

RowStreams::~RowStreams() {
  a_rows_.abandon();
  c_rows_.abandon();
  if (reading_.joinable()) reading_.join();
  if (writing_.joinable()) writing_.join();
}

void RowStreams::start_reading(const io::Operand& a, std::int64_t row0, std::int64_t rows, std::int64_t k, DType dtype,
                               void* into, int chunks, bool scan) {
  reading_ = std::thread([this, a, row0, rows, k, dtype, into, chunks, scan] {
    const auto start = std::chrono::steady_clock::now();
    const std::size_t row_bytes = static_cast<std::size_t>(k) * dtype_size(dtype);
    try {
      for (int piece = 0; piece < chunks; ++piece) {
        const std::int64_t r0 = rows * piece / chunks, r1 = rows * (piece + 1) / chunks;
        if (a_rows_.abandoned()) return;  // the GEMM failed: no one waits for the rest
        if (r1 == r0) continue;
        void* at = static_cast<unsigned char*>(into) + static_cast<std::size_t>(r0) * row_bytes;
        io::read_operand_block(a, row0 + r0, r1 - r0, 0, k, dtype, at);
        if (scan) {
          const io::NonfiniteCount s = io::count_nonfinite(at, dtype, r1 - r0, k, row0 + r0, 0, k);
          if (scan_.count == 0) scan_.first = s.first;
          scan_.count += s.count;
        }
        a_rows_.publish(r1);
      }
    } catch (...) {
      read_error_ = std::current_exception();
      a_rows_.abandon();
    }
    read_seconds_ = seconds_since(start);
  });
}

void RowStreams::start_writing(io::BlockSink* writer, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                               std::int64_t cols, DType dtype, const void* c) {
  writing_ = std::thread([this, writer, row0, col0, rows, cols, dtype, c] {
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * dtype_size(dtype);
    try {
      for (std::int64_t written = 0; written < rows;) {
        const std::int64_t ready = std::min(rows, c_rows_.wait_for(written + 1));
        const auto start = std::chrono::steady_clock::now();
        writer->write_block(row0 + written, col0, ready - written, cols,
                            static_cast<const unsigned char*>(c) + static_cast<std::size_t>(written) * row_bytes);
        write_seconds_ += seconds_since(start);
        written = ready;
      }
    } catch (const backend::RowsAbandoned&) {
      // the GEMM failed; its error is the one reported
    } catch (...) {
      write_error_ = std::current_exception();
    }
  });
}

void RowStreams::finish(std::exception_ptr gemm_error) {
  if (gemm_error) {  // nobody uses the rest of A, and the writer waits for C rows that will not come
    a_rows_.abandon();
    c_rows_.abandon();
  }
  if (reading_.joinable()) reading_.join();
  if (writing_.joinable()) writing_.join();
  if (read_error_) std::rethrow_exception(read_error_);
  if (gemm_error) std::rethrow_exception(gemm_error);
  if (write_error_) std::rethrow_exception(write_error_);
}

}  // namespace tessera::algorithms
