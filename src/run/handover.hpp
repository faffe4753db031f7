#pragma once
// What run_job (run/pipeline.cpp) has settled before it hands a job to the ksplit or summa
// algorithm, and the step every algorithm that leaves C in blocks ends with.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "backend/backend.hpp"
#include "core/dtype.hpp"
#include "comm/comm.hpp"
#include "partition/partition.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"
#include "run/pipeline.hpp"
#include "run/progress.hpp"

namespace tessera::run {

struct JobStart {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f64;
  partition::GridShape grid;                      // the chosen or given process grid
  std::unique_ptr<io::MatrixWriter> writer;  // rank 0 only
  double started = 0;                        // MPI_Wtime() when run_job began
  report::JobReport job;                     // filled up to the inputs
};

// Fills the block fields of an active rank's record (block (i, j), its rows and columns, flops).
void describe_block(const partition::Partition& part, int rank, report::RankRecord& me);

// The end of every algorithm: each rank's record (with its peak host memory and, from `be`, its
// peak device memory) goes to rank 0, which prints the table (unless --quiet), then `after_table`
// (if any), and writes the JSON report (--report). Collective; job.wall_seconds becomes the
// slowest rank's time since `started` (MPI_Wtime()).
void publish_report(const RunOptions& o, const comm::Comm& comm, report::JobReport& job, report::RankRecord me,
                    double started, const backend::Backend* be, const std::function<void()>& after_table = {});

// --algorithm auto|panels|summa|ksplit -> the one that runs. Throws InputError for an unknown
// name, or a choice that cannot honour another option (--verify and --baseline need the
// panels' whole A rows and B columns; --gpu-memory means out of core, which only panels does).
// `auto` models the traffic per rank (words moved into a GPU or across the network):
//  - ksplit when the ranks are GPUs joined by NCCL (cuda, nccl), P >= 2 and the P partial
//    products are no bigger than the inputs (P M N <= (M + N) K; 2 ranks on a cube qualify):
//    each input word moves once and C is summed over NVLink (run/ksplit.hpp);
//  - summa when P >= 2 and either the GPUs are joined by NCCL (panels are broadcast between
//    GPUs instead of copied from the host to each) or the grid is 2-D (panels would hold pr or
//    pc copies of A and B; summa holds one, memory O((MK + KN + MN) / P) per rank);
//  - panels otherwise (one rank, a 1-D grid on host MPI: no broadcast saves anything).
std::string choose_algorithm(const RunOptions& o, bool cuda, bool nccl, int nranks, std::int64_t m, std::int64_t n,
                             std::int64_t k, partition::GridShape grid);

// Collective: each active rank's C block (laid out by `part`) goes to rank 0, which writes it.
// Rank 0's own block is written from `c_block` (unless `root_written`: it is in the output already); with a `spare` buffer (rank 0 only, of
// gather_spare_elements() elements) the blocks alternate between the two, and each is written
// on a second thread while the next one arrives; without one they arrive, one after the other,
// into `c_block` (block (0, 0) is the largest: split() makes the first ranges the longer ones).
// Rank 0 keeps receiving after a write error so no sender is left blocked; the error is then
// agreed on by every rank (JobError). Appends "gather" (receiving) and, on rank 0, "write"
// phases to `phases`; with a spare buffer the two overlap.
// The blocks travel by host MPI unless `send` (senders) and `receive` (rank 0: rank r's block of
// `bytes` into `into`) say otherwise, e.g. GPU to GPU.
struct BlockTransport {
  std::function<void()> send;
  std::function<void(int r, void* into, std::size_t bytes)> receive;
};
void gather_and_write(const comm::Comm& comm, const partition::Partition& part, DType dtype, void* c_block, void* spare,
                      io::MatrixWriter* writer, Progress& progress, report::Phases& phases,
                      const BlockTransport& transport = {}, bool root_written = false);

// Runs `release` (freeing page-locked buffers: unregistering them takes time) on a thread while
// the caller goes on, e.g. with the gather or rank 0's commit; the thread first enters `be`'s
// device (Backend::enter_thread), if any. wait() joins it and returns the seconds it took; the
// destructor joins it too (on the way out of an exception). `release` must not throw and must
// not call MPI.
class BackgroundRelease {
 public:
  BackgroundRelease(const backend::Backend* be, std::function<void()> release);
  ~BackgroundRelease();
  BackgroundRelease(const BackgroundRelease&) = delete;
  BackgroundRelease& operator=(const BackgroundRelease&) = delete;
  double wait();

 private:
  double seconds_ = 0;  // before thread_: set before the thread starts
  std::thread thread_;
};

// Collective, where the job's ranks exchange data with NCCL: which transport NCCL has between
// the GPUs of each node (P2P/NVLink, P2P/PCIe, SHM, NET: comm/peers.hpp) goes into the report,
// and pairs of ranks on one node that cannot link their GPUs directly become warnings.
void note_nccl_transport(const comm::Comm& comm, int device, report::JobReport& job, report::RankRecord& me);

// Elements of rank 0's spare gather buffer: the largest of the blocks that arrive into it (the
// odd-numbered ones).
std::int64_t gather_spare_elements(const partition::Partition& part);

}  // namespace tessera::run
