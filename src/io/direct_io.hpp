#pragma once
// Matrices moved between memory and contiguous storage in a file with pread/pwrite, without
// HDF5: the bulk of reading a contiguous input and of writing C. HDF5 only tells where the
// elements lie (matrix_writer.cpp, read_block.cpp); these functions never call it, so they run on any thread and on
// every rank at once.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "io/nonfinite.hpp"

namespace tessera::io {

// Direct (pread/pwrite) transfers, unless TESSERA_HDF5_DIRECT=0 (HDF5 then moves every byte).
bool direct_io_enabled();

// Threads a large transfer or decompression may use: TESSERA_IO_THREADS if set, else what
// set_io_threads() was given (the job: this rank's share of the node's cores), else the cores of
// this machine.
int io_threads();
void set_io_threads(int threads);

// A block of a row-major matrix between memory and a contiguous dataset whose element (0, 0) is
// at byte `base` of the file open as `fd` (its rows `cols` long), split over a few threads.
// Returns 0 or the first failure's code (errno, or -1: end of file / nothing written).
int transfer_direct(int fd, bool write, std::int64_t base, std::int64_t cols, std::int64_t row0, std::int64_t nrows,
                    std::int64_t col0, std::int64_t ncols, std::size_t esize, void* buffer);

// Where a new output's contiguous dataset lies in its (temporary) file, so that any process that
// sees the file can write its part of the matrix there. base < 0: no such place (HDF5 writes).
struct DirectTarget {
  std::string file;
  std::int64_t base = -1;
  std::int64_t rows = 0, cols = 0;
  std::size_t esize = 0;
  bool valid() const { return base >= 0; }
};

// Something blocks of a matrix can be written to, at their place: the output file's writer
// (MatrixWriter, rank 0) or one rank's BlockFile.
class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // data: nrows x ncols row-major, placed at (row0, col0). Throws IoError / InputError.
  virtual void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                           const void* data) = 0;
  // NaN and Inf among the elements written through this sink so far (a product of finite inputs
  // can overflow: the run warns or refuses before it commits C).
  virtual NonfiniteCount nonfinite_written() const = 0;
};

// One process's handle on an output it shares with others (DirectTarget): writes its blocks with
// pwrite, starting their write-back to the disk at once, and makes them durable with sync().
class BlockFile : public BlockSink {
 public:
  explicit BlockFile(const DirectTarget& target);  // throws IoError when the file cannot be opened
  ~BlockFile() override;
  BlockFile(const BlockFile&) = delete;
  BlockFile& operator=(const BlockFile&) = delete;

  void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                   const void* data) override;
  NonfiniteCount nonfinite_written() const override;
  // fsync: what this process wrote is on the disk (network file systems report write errors here).
  void sync();

 private:
  DirectTarget t_;
  int fd_ = -1;
  mutable std::mutex counted_lock_;
  NonfiniteCount counted_;
};

// Whether other processes see the same output file: the creator writes a random token where the
// matrix starts (overwritten by element (0, 0) later), every other process reads it back. A
// process on a node without the creator's file system reads nothing or something else.
void write_token(const DirectTarget& target, std::uint64_t token);  // throws IoError
bool sees_token(const DirectTarget& target, std::uint64_t token);   // never throws

}  // namespace tessera::io
