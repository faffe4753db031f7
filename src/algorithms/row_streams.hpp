#pragma once
// Streaming around one rank's GEMM (panels): A's rows are read from the file on a thread while
// the GEMM already multiplies the rows that have arrived, and rank 0's C rows are written to the
// output on another thread as the GEMM hands them back. The backend sees only the two
// RowProgress counters (backend/backend.hpp); the HDF5 side stays here.
#include <cstdint>
#include <exception>
#include <string>
#include <thread>

#include "backend/backend.hpp"
#include "core/dtype.hpp"
#include "io/hdf5_io.hpp"
#include "io/nonfinite.hpp"
#include "io/operand.hpp"

namespace tessera::algorithms {

// Pieces A's block is read in when it streams: 1 (no streaming) below kStreamMinBytes, else
// kStreamChunks. TESSERA_STREAM_CHUNKS=N overrides it (N >= 1; 1 turns streaming off), for tests
// and comparisons. Throws InputError for a value that is not a positive integer.
inline constexpr std::size_t kStreamMinBytes = std::size_t{64} << 20;
inline constexpr int kStreamChunks = 8;
int stream_chunks(std::size_t a_block_bytes);

class RowStreams {
 public:
  RowStreams() = default;
  RowStreams(const RowStreams&) = delete;
  RowStreams& operator=(const RowStreams&) = delete;
  ~RowStreams();  // gives up and joins the threads that still run (an error elsewhere)

  // Starts reading rows [row0, row0 + rows) of `a` (all k columns, as `dtype`; of its transpose
  // when the operand says so: io/operand.hpp) into `into`, in
  // `chunks` pieces published on a_rows(). With `scan`, each piece is checked for NaN/Inf
  // (nonfinite(), after finish()).
  void start_reading(const io::Operand& a, std::int64_t row0, std::int64_t rows, std::int64_t k, DType dtype,
                     void* into, int chunks, bool scan);
  // Starts writing the rows of a rows x cols C block, placed at (row0, col0) of `writer`'s
  // matrix (the output's writer, or this rank's own handle on it), from `c` as they are published
  // on c_rows().
  void start_writing(io::BlockSink* writer, std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols,
                     DType dtype, const void* c);

  const backend::RowProgress* a_rows() const { return reading_.joinable() ? &a_rows_ : nullptr; }
  backend::RowProgress* c_rows() { return writing_.joinable() ? &c_rows_ : nullptr; }

  // After the GEMM (`gemm_error`: what it threw, or null): waits for both threads and rethrows
  // the first cause of failure: the reader's error, else the GEMM's, else the writer's.
  void finish(std::exception_ptr gemm_error);

  double read_seconds() const { return read_seconds_; }
  double write_seconds() const { return write_seconds_; }
  const io::NonfiniteCount& nonfinite() const { return scan_; }

 private:
  std::thread reading_, writing_;
  backend::RowProgress a_rows_, c_rows_;
  std::exception_ptr read_error_, write_error_;
  double read_seconds_ = 0, write_seconds_ = 0;
  io::NonfiniteCount scan_;
};

}  // namespace tessera::algorithms
