#include "algorithms/band_writer.hpp"

#include <chrono>

namespace tessera::algorithms {

BandWriter::~BandWriter() { join(); }

void BandWriter::join() {
  if (thread_.joinable()) thread_.join();
  seconds_ += band_seconds_;
  band_seconds_ = 0;
}

void BandWriter::write(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols, const void* data) {
  join();
  if (error_ || rows == 0 || cols == 0) return;
  thread_ = std::thread([this, row0, col0, rows, cols, data] {
    const auto start = std::chrono::steady_clock::now();
    try {
      sink_->write_block(row0, col0, rows, cols, data);
    } catch (...) {
      error_ = std::current_exception();
    }
    band_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

void BandWriter::finish() {
  join();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tessera::algorithms
