#pragma once
// C in row bands: a band goes to the output on a thread of its own while the next band computes
// (summa and ksplit over bands of C; panels streams rows instead, algorithms/row_streams.hpp).
#include <cstdint>
#include <exception>
#include <thread>

#include "io/direct_io.hpp"

namespace tessera::algorithms {

class BandWriter {
 public:
  explicit BandWriter(io::BlockSink* sink) : sink_(sink) {}
  ~BandWriter();  // waits for the band in flight
  BandWriter(const BandWriter&) = delete;
  BandWriter& operator=(const BandWriter&) = delete;

  // Waits for the band before, then writes rows x cols at (row0, col0) from `data` on a thread;
  // `data` must stay untouched until the next write() or finish(). After a failed write the
  // later bands are skipped (the compute goes on: its collectives must match on every rank).
  void write(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols, const void* data);
  // Waits for the last band; rethrows the first write's failure.
  void finish();
  double seconds() const { return seconds_; }

 private:
  void join();

  io::BlockSink* sink_;
  std::thread thread_;
  std::exception_ptr error_;
  double seconds_ = 0;       // writing, summed over the bands
  double band_seconds_ = 0;  // the band in flight
};

}  // namespace tessera::algorithms
