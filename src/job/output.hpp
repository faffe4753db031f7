#pragma once
// How C reaches the output file (--write), for every algorithm (algorithms::COut):
//  - in place: every active rank writes its own C straight into the output's temporary file
//    (pwrite at its offsets, io/direct_io.hpp) and makes it durable; rank 0 then adds the
//    attributes and commits by rename. Nothing of C passes through rank 0 that rank 0 did not
//    compute. Taken when the output is contiguous and every rank sees the same file (detected:
//    rank 0 writes a random token into it, the others read it back), before the run is settled
//    (the route is part of the environment the ranks agree on: algorithms/setting.hpp).
//  - gather: the blocks travel to rank 0, which writes them (job/gather.hpp). Taken where the
//    ranks do not share the file (e.g. nodes without a common file system), where HDF5 writes the
//    output itself (TESSERA_HDF5_DIRECT=0), or when asked for (--write gather).
#include <atomic>
#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"

namespace tessera::job {

class OutputRoute final : public algorithms::COut {
 public:
  // Collective. `writer`: the output's writer on rank 0 (null elsewhere). Throws (on every rank)
  // InputError when in-place was asked for and cannot be done.
  static std::unique_ptr<OutputRoute> choose(const comm::Comm& comm, io::MatrixWriter* writer,
                                             algorithms::WriteRoute want, DType dtype);
  // This rank writes no C (the run leaves it idle; never rank 0): it lets go of its handle on the
  // output.
  void idle();
  OutputRoute(const OutputRoute&) = delete;
  OutputRoute& operator=(const OutputRoute&) = delete;

  // Where rank 0's spare gather buffer comes from (page-locked on a GPU), and where the progress
  // of a gather is told.
  void use(backend::Backend* be, std::function<void(const std::string&)> progress);

  bool in_place() const override { return in_place_; }
  // "in place" or "gather", with why where it matters (for the report and the C attributes).
  const std::string& description() const { return description_; }
  io::BlockSink* sink() const override { return sink_ ? &counted_ : nullptr; }
  void write_own_block(const comm::Comm& comm, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                       std::int64_t cols, const void* c, bool already_written, double write_seconds,
                       report::Phases& phases) const override;
  void gather(const comm::Comm& comm, const partition::Partition& part, void* c, const Transport& transport,
              bool root_written, report::Phases& phases) const override;

  // --beta: every block of C that leaves this rank through the sink becomes C + beta C_old, C_old's
  // block read from `old` (the output dataset as it was; the run replaces it only at commit) just
  // before it is written. One place for every algorithm and every way C leaves (streamed rows,
  // bands, a gather, a whole block); a block computed is never changed in memory (--verify checks
  // it, and a gather may send it from the GPU).
  void add_old_c(const io::DatasetRef& old, std::complex<double> beta);

  // Collective: NaN and Inf in all of C as written, over every rank's writes (result on every
  // rank), for job/result.hpp's commit_result.
  io::NonfiniteCount nonfinite_written(const comm::Comm& comm) const;
  // Bytes of C this rank wrote into the output (the report's write rate).
  std::int64_t bytes_written() const { return counted_.bytes; }

 private:
  OutputRoute() = default;

  // The sink, counting the bytes that go through it (and adding beta C_old to them).
  struct Counted final : io::BlockSink {
    io::BlockSink* inner = nullptr;
    std::size_t esize = 0;
    DType dtype = DType::f64;
    std::atomic<std::int64_t> bytes{0};
    std::complex<double> beta = 0;  // complex for a complex C (a real C uses the real part)
    io::DatasetRef old;             // with beta != 0
    void write_block(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols,
                     const void* data) override;
    // Chunks compressed by the block's rank are C's own only where no beta C_old is added here.
    void write_block(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols, const void* data,
                     const std::vector<io::CompressedChunk>& ready) override {
      if (beta != 0.0 || ready.empty()) return write_block(row0, col0, rows, cols, data);
      inner->write_block(row0, col0, rows, cols, data, ready);
      bytes += rows * cols * static_cast<std::int64_t>(esize);
    }
    // (Only where no beta C_old is added: OutputRoute::gather compresses on the ranks only then.)
    void write_chunks(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols,
                      const std::vector<io::CompressedChunk>& ready, const io::NonfiniteCount& seen) override {
      if (beta != 0.0) throw std::logic_error("write_chunks: beta C_old is added to blocks, not to chunks");
      inner->write_chunks(row0, col0, rows, cols, ready, seen);
      bytes += rows * cols * static_cast<std::int64_t>(esize);
    }
    io::NonfiniteCount nonfinite_written() const override { return inner->nonfinite_written(); }
    // Rounded blocks only where no beta C_old is added here (it is added to C as computed).
    io::Stored takes_rounded() const override {
      return beta == 0.0 && inner ? inner->takes_rounded() : io::Stored::same;
    }
    void write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols,
                             const void* data) override {
      if (beta != 0.0) throw std::logic_error("write_rounded_block: beta C_old is added to C as computed");
      inner->write_rounded_block(row0, col0, rows, cols, data);
      bytes += rows * cols * static_cast<std::int64_t>(esize);  // (as computed, as write_block counts)
    }
  };

  bool in_place_ = false;
  std::string description_;
  std::optional<io::ChunkLayout> chunks_;  // C compressed chunk by chunk: every rank compresses its own
  DType dtype_ = DType::f64;
  std::unique_ptr<io::BlockFile> own_;  // in place, ranks other than 0
  io::BlockSink* sink_ = nullptr;
  mutable Counted counted_;
  backend::Backend* be_ = nullptr;
  std::function<void(const std::string&)> progress_;
};

}  // namespace tessera::job
