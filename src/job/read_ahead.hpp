#pragma once
// B's first rows read while the GPU starts. The node's first rank starts CUDA beside MPI and the
// plan (backend::start_gpu_early): about 0.2 s on the H200 in which the cores are idle and the
// job could not read, because the staged GEMM reads B straight into the backend's page-locked
// buffers. ReadAhead reads B's rows in the rank's own order into ordinary memory meanwhile,
// through the same read (the rank's reads_.b: NaN/Inf counted, alpha applied), and serves them
// from there when the GEMM asks; what it did not reach is read as before.
//
// TESSERA_READ_AHEAD: 1 (default) while a GPU starts, 0 never, `force` on every busy rank
// whatever the backend, the first half of its bound and not stopped early (tests: the CPU reads
// through the same path, and the rows after those read ahead as before).
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

namespace tessera::job {

using RowRead = std::function<void(std::int64_t row0, std::int64_t rows, void* into)>;

class ReadAhead {
 public:
  // Whether a read ahead is wanted now: TESSERA_READ_AHEAD, and a GPU still starting.
  static bool wanted();
  // The most it reads: 1 GiB, or a sixteenth of the machine's memory where that is less.
  static std::size_t default_bound();

  ReadAhead() = default;
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;
  ~ReadAhead();  // stops the reading (joins it) and gives the memory back
  // Starts reading rows 0.. of `rows` (`row_bytes` each) through `read`, in pieces, on a thread
  // of its own, up to `max_bytes`; until stop().
  void start(RowRead read, std::int64_t rows, std::size_t row_bytes, std::size_t max_bytes);
  // Ends the read ahead after the piece in hand (`force`: after the last) and joins it. A piece
  // that failed is dropped with those after it: the job reads them again and meets the failure
  // where a read would.
  void stop();
  // `read` with the rows read ahead served from memory (copied by a few threads); the memory is
  // given back once a request reaches the last of them. Call after stop().
  RowRead serving(RowRead read);
  // Gives the rows read ahead back unused (they were read in a form the GEMM will not take: the
  // caller reads them again, and forgets what their reads counted). Call after stop().
  void drop() { release(); }
  std::int64_t rows_ready() const { return ready_rows_; }

 private:
  void copy_rows(std::int64_t row0, std::int64_t rows, unsigned char* into) const;
  void release();

  std::thread thread_;
  std::thread releaser_;  // frees the pieces once served
  std::atomic<bool> stop_{false};
  bool to_the_end_ = false;
  std::int64_t piece_rows_ = 0;
  std::size_t row_bytes_ = 0;
  std::vector<std::unique_ptr<unsigned char[]>> pieces_;  // piece i: rows [i * piece_rows_, ...)
  std::int64_t ready_rows_ = 0;                          // read whole, without failure (after stop)
};

}  // namespace tessera::job
