#pragma once
// An algorithm, as the job harness (job/run_job.cpp) runs it: a small strategy. The harness plans
// the job, starts the backend, reads what the algorithm asks for, refuses bad inputs, commits C
// and reports, once for every algorithm. An algorithm says
//   - what each rank reads and holds (share),
//   - its footprint: memory, traffic and predicted time per rank (rank_footprint; the one model
//     of the dry run, `auto` and the refusals: algorithms/footprint.hpp),
//   - its compute step (start, compute), and
//   - how C leaves the rank (compute and deliver, through the output route COut).
// Adding an algorithm is one file implementing Algorithm, a line in algorithms/registry.cpp,
// and its tests (docs/architecture.md).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/footprint.hpp"
#include "algorithms/row_streams.hpp"
#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"

namespace tessera::algorithms {

// The options an algorithm reads (the job's RunOptions, less what only the harness uses).
struct Options {
  std::string comm = "auto";     // --comm
  std::int64_t panel_width = 0;  // --panel-width (summa)
  std::string baseline;          // --baseline (panels)
  std::string grid;              // --grid as given ("" = chosen)
  bool verify = false;           // --verify: C is checked before any of it is written (panels)
  std::size_t gpu_memory = 0;    // --gpu-memory in bytes (panels: out of core within it)
  int bands = 0;                 // TESSERA_BANDS: bands of C for summa and ksplit (0: the model's)
};

// This rank's share: its block of C (for the report and the kernel choice) and what it reads.
struct Share {
  bool active = false;  // false: idle (the grid needs fewer ranks than the job has)
  int block_row = -1, block_col = -1;
  partition::Range rows, cols;  // of C
  double flops = 0;
  std::int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;  // the GEMM `--kernel auto` is chosen for
  partition::Range a_rows, a_cols, b_rows, b_cols;  // the blocks of A and B it reads
  // It counts the NaN/Inf of its A (B) block: every element is counted by one rank.
  bool count_a = false, count_b = false;
  bool a_may_stream = false;    // A's rows may arrive while the GEMM runs (RowStreams)
  std::int64_t c_elements = 0;  // host C the harness allocates for it
  bool zero_c = false;          // ... filled with zeros (the algorithm sums into it)
};

// How C reaches the output (job/output.hpp implements it: in place, or gathered to rank 0).
class COut {
 public:
  virtual ~COut() = default;
  // Every rank writes its own C into the output file.
  virtual bool in_place() const = 0;
  // Where this rank writes its own C rows: its own handle on the file in place, rank 0's writer,
  // or null (a rank whose block is gathered).
  virtual io::BlockSink* sink() const = 0;
  // Collective, in place: each rank writes its C block (rows x cols at (row0, col0)) unless
  // `already_written` (streamed during the compute, in `write_seconds`), makes its writes durable,
  // and every rank agrees that all did. Appends a "write" phase on ranks that wrote.
  virtual void write_own_block(const comm::Comm& comm, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                               std::int64_t cols, const void* c, bool already_written, double write_seconds,
                               report::Phases& phases) const = 0;
  // Collective, gathered: every active rank's C block of `part` goes to rank 0, which writes it
  // (unless `root_written`). The blocks travel by host MPI unless `send` / `receive` say otherwise.
  struct Transport {
    std::function<void()> send;
    std::function<void(int from, void* into, std::size_t bytes)> receive;
  };
  virtual void gather(const comm::Comm& comm, const partition::Partition& part, void* c, const Transport& transport,
                      bool root_written, report::Phases& phases) const = 0;
};

// Rows of the rank's A block and B block (all their columns), read from the inputs on request, for
// a staged GEMM (backend.hpp's StagedProblem): the harness's own reads, checked and scaled.
struct StagedReads {
  std::function<void(std::int64_t row0, std::int64_t rows, void* into)> a, b;
};

// One rank's run of an algorithm: what the harness hands it, and what it leaves for the report.
struct RankRun {
  RankRun(const comm::Comm& comm_, backend::Backend& be_, const std::string& kernel_, const Problem& problem_,
          const Options& options_, const Share& share_, const MachineModel& machine_, const COut& out_,
          report::RankRecord& me_, report::JobReport& job_, std::function<void(const std::string&)> progress_)
      : comm(comm_),
        be(be_),
        kernel(kernel_),
        problem(problem_),
        options(options_),
        share(share_),
        machine(machine_),
        out(out_),
        me(me_),
        job(job_),
        progress(std::move(progress_)) {}
  const comm::Comm& comm;
  backend::Backend& be;
  const std::string& kernel;
  const Problem& problem;
  const Options& options;
  const Share& share;
  const MachineModel& machine;
  const COut& out;
  report::RankRecord& me;
  report::JobReport& job;
  std::function<void(const std::string&)> progress;
  report::Progress* work = nullptr;       // rank 0's progress display: the work of the compute step (or null)
  Setting setting;                        // Algorithm::start fills in what every rank agreed on
  backend::HostBuffer a, b, c;            // read (A possibly still arriving: streams) and allocated by the harness
  RowStreams* streams = nullptr;          // A's rows arriving while the GEMM runs; null: A was read before
  // Staged (panels): A and B are read piece by piece into the backend's own buffers and C written
  // as it comes back, so a, b and c stay empty. Set by the harness where the backend stages.
  const StagedReads* staged = nullptr;
  bool c_written = false;                 // compute wrote this rank's C to the output already
  double c_write_seconds = 0;             // ... taking this long (its share of the write phase)
  std::vector<io::Attribute> attributes;  // the algorithm's own attributes of C
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // The grid it runs on ({1, 1} for an algorithm that splits K) and the ranks that compute.
  virtual partition::GridShape grid(const Problem& p) const { return p.grid; }
  virtual int busy_ranks(const Problem& p) const { return grid(p).size(); }
  virtual Share share(const Problem& p, int rank) const = 0;
  // Its model of `rank` (footprint.hpp). Pure.
  virtual RankFootprint rank_footprint(const Problem& p, const Setting& s, const MachineModel& m, int rank) const = 0;
  // What a rank holds, for the message of the host-memory refusal ("A rows, B columns and C
  // block of a 2x2 grid"), and the advice that goes with it.
  virtual std::string holds(const Problem& p) const = 0;
  virtual std::string memory_advice() const { return "use more ranks on more nodes"; }
  // Whether C blocks go to rank 0 when they are not written in place (COut::gather); an
  // algorithm that sums C onto rank 0 instead says false.
  virtual bool gathers_blocks() const { return true; }
  // Row bands of C it computes in, each written while the next computes (1: C in one piece).
  virtual int bands(const Problem& p, const Setting& s, const MachineModel& m) const {
    (void)p, (void)s, (void)m;
    return 1;
  }

  // Collective, after the backend started: decides what every rank must agree on (the
  // communication path, the panel width) into run.setting and run.job.comm.
  virtual void start(RankRun& run) = 0;
  // Collective: the compute step. May hand C to the output as it is computed (run.c_written).
  virtual void compute(RankRun& run) = 0;
  // Collective: C leaves the rank (in place, or to rank 0), unless compute wrote it.
  virtual void deliver(RankRun& run) = 0;
  // Frees what the algorithm holds on the device and in its NCCL groups. Runs on a thread of its
  // own, beside rank 0's commit: no MPI call (its MPI communicators go with the algorithm).
  virtual void release() {}
};

// The share of a rank that owns block (i, j) of the problem's grid (panels, summa): its block of C,
// and the kernel chosen for it (idle ranks: for the largest block) on an m x n x `gemm_k` GEMM.
// What it reads is the algorithm's to fill in.
Share block_share(const Problem& p, int rank, std::int64_t gemm_k);

// From `first` bands, doubling up to `most`: the count with the fewest `seconds`, among those
// `allowed` (the first that is not ends the search).
int fastest_bands(int first, int most, const std::function<double(int)>& seconds,
                  const std::function<bool(int)>& allowed);

// panels, summa, ksplit (registry.cpp). Throws InputError for another name.
std::unique_ptr<Algorithm> make_algorithm(const std::string& name);
std::vector<std::string> algorithm_names();

// The whole job's footprint: every rank's, rank 0's gather, and the predicted end-to-end time.
Footprint footprint(const Algorithm& alg, const Problem& p, const Setting& s, const MachineModel& m);

}  // namespace tessera::algorithms
