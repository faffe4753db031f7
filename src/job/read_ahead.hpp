#pragma once
// B's first rows, read while the rank's GPU starts. CUDA's start (driver and context: ~0.2 s on
// the H200) runs on a thread of its own (backend::start_gpu_early); the rank's reads used to wait
// for it, since they go into the backend's page-locked buffers. Here a thread reads the first
// rows of this rank's B block into ordinary memory from the end of the plan until the reads
// begin (ReadAhead::stop); the rank's reads of B then copy those rows instead of reading them
// (the NaN/Inf count and the scaling by alpha still happen there, on the copy). At most `cap`
// bytes are held, and only until the job ends. A failed read ahead is forgotten: the rows it
// did not get are read as before, and that read meets the failure and reports it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "core/dtype.hpp"
#include "io/operand.hpp"

namespace tessera::job {

class ReadAhead {
 public:
  ReadAhead() = default;
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;
  ~ReadAhead() { drop(); }

  // Reads rows [row0, row0 + rows) x columns [col0, col0 + cols) of `op` (as `dtype`), up to
  // `cap` bytes of whole rows, in pieces, on a thread, until stop() (or all of them: `whole`, tests).
  void start(const io::Operand& op, std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
             DType dtype, std::size_t cap, bool whole = false);
  // Ends the reading after the piece in flight (`whole`: once all are read); returns the rows held
  // (the first rows of the block).
  std::int64_t stop();
  // After stop(): copies the held rows among [row0, row0 + rows) of the block into `into` (whole
  // rows, contiguous), from row0 on; returns how many leading rows it copied (0 if row0 is not held).
  std::int64_t serve(std::int64_t row0, std::int64_t rows, void* into) const;

  // Stops at once and frees the rows (after the reads of B, beside the commit; or a failed job).
  void drop();

  std::int64_t rows_held() const { return held_.load(); }
  std::size_t bytes_held() const { return static_cast<std::size_t>(held_.load()) * row_bytes_; }
  double seconds() const { return seconds_; }

 private:
  void read_pieces(io::Operand op, std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
                   DType dtype);

  struct Free {
    void operator()(unsigned char* p) const;
  };
  std::unique_ptr<unsigned char, Free> rows_;
  std::size_t row_bytes_ = 0;
  std::atomic<std::int64_t> held_{0};
  std::atomic<bool> stopping_{false};
  bool whole_ = false;
  double seconds_ = 0;
  std::thread thread_;
};

}  // namespace tessera::job
