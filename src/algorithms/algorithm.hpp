#pragma once
// An algorithm, as the job harness (job/run_job.cpp) runs it: a small strategy. The harness plans
// the job, starts the backend, reads what the algorithm asks for, refuses bad inputs, commits C
// and reports, once for every algorithm. An algorithm says
//   - what each rank reads and holds (share),
//   - its footprint: memory, traffic and predicted time per rank (rank_footprint; the one model
//     of the dry run, `auto` and the refusals: algorithms/footprint.hpp),
//   - how it runs (settle: the Setting, decided once on rank 0 and sent with the plan),
//   - its compute step (start, which only checks the plan still holds; compute), and
//   - how C leaves the rank (compute and deliver, through the output route COut).
// Adding an algorithm is one file implementing Algorithm, a line in algorithms/registry.cpp,
// and its tests (docs/architecture.md).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "algorithms/footprint.hpp"
#include "algorithms/row_streams.hpp"
#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "core/error.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"

namespace tessera::algorithms {

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
  std::function<void(std::int64_t row0, std::int64_t rows, void*into)> a, b;
  // Where A and B are both stored as a 16-bit float and read as such (the job's half_inputs, no
  // transpose, alpha 1): the same rows as their 2-byte values, not widened (StagedProblem's
  // fill_a_half / fill_b_half); `half` names the type (io::Stored::f16 / bf16; same: none).
  io::Stored half = io::Stored::same;
  std::function<void(std::int64_t row0, std::int64_t rows, void*into)> a_half, b_half;
};

// One rank's run of an algorithm: what the harness hands it, and what it leaves for the report.
struct RankRun {
  RankRun(const comm::Comm& comm_, backend::Backend& be_, const Problem& problem_, const Asked& asked_,
          const Setting& setting_, const Share& share_, const MachineModel& machine_, const COut& out_,
          report::RankRecord& me_, report::JobReport& job_, std::function<void(const std::string&)> progress_)
      : comm(comm_),
        be(be_),
        problem(problem_),
        asked(asked_),
        setting(setting_),
        kernel(setting_.kernel),
        share(share_),
        machine(machine_),
        out(out_),
        me(me_),
        job(job_),
        progress(std::move(progress_)) {}
  const comm::Comm& comm;
  backend::Backend& be;
  const Problem& problem;
  const Asked& asked;
  const Setting& setting;     // settled on rank 0 with the plan: only read
  const std::string& kernel;  // the setting's
  const Share& share;
  const MachineModel& machine;
  const COut& out;
  report::RankRecord& me;
  report::JobReport& job;
  std::function<void(const std::string&)> progress;
  report::Progress* work = nullptr;  // rank 0's progress display: the work of the compute step (or null)
  backend::HostBuffer a, b, c;       // read (A possibly still arriving: streams) and allocated by the harness
  RowStreams* streams = nullptr;     // A's rows arriving while the GEMM runs; null: A was read before
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

  // How strongly `auto`'s rule of thumb favours it for this job (0: not at all); `auto` starts
  // from the highest (algorithms/choice.hpp), then asks the model.
  virtual int rule_of_thumb(const Asked& asked, const Problem& p, const Environment& env) const {
    (void)asked, (void)p, (void)env;
    return 0;
  }
  // Whether `auto` asks the model about it on q's grid (q: p, the job as asked, on another grid).
  virtual bool auto_candidate(const Problem& p, const Problem& q) const {
    (void)p, (void)q;
    return true;
  }
  // How it runs this job on ranks that have `env` (common_setting, then its own fields: comm path,
  // panel width, bands, ...). Pure; on rank 0, with the plan, and in the dry run. Throws
  // InputError for an option it cannot honour or a path it cannot take.
  virtual Setting settle(const Asked& asked, const Problem& p, const Environment& env, const MachineModel& m) const = 0;
  // The settings it runs with, as the dry run prints them and the report records them
  // ("settings"): both from the one settled value. By default the backend, kernel, comm path,
  // write route and bands (common.cpp); an algorithm adds its own fields.
  virtual nlohmann::json describe(const Setting& s) const;

  // Collective, after the backend started: checks that run.setting still holds (the backends and
  // GPUs it was settled for) and sets up what every rank needs before reading (warnings, groups).
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

// Collective, in start(): the plan still holds on every rank: each busy rank's backend is of the
// kind the setting was settled for (Setting::gpu, from the environment every rank agreed on).
// Throws on every rank where one is not.
void check_backend(const RankRun& run);

// The start of a block algorithm's deliver step: where C is written in place, each rank writes its
// own block (`written_seconds`: what writing it already took during compute, where it did:
// run.c_written) and this returns true; otherwise it says C is gathered and returns false.
bool write_own_block_in_place(RankRun& run, double written_seconds);

// make(), where a DeviceError it throws (a product the GPU has no room for: the backend says what
// is missing) gets `advice` (the algorithm's: what to do about it).
template <class Make>
auto with_advice(const std::string& advice, Make&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const DeviceError& e) {
    throw DeviceError(std::string(e.what()) + ": " + advice);
  }
}

// From `first` bands, doubling up to `most`: the count with the fewest `seconds`, among those
// `allowed` (the first that is not ends the search).
int fastest_bands(int first, int most, const std::function<double(int)>& seconds,
                  const std::function<bool(int)>& allowed);

// The algorithms of registry.cpp's table, then those a program registered (tests): by name.
// Throws InputError for another name.
std::unique_ptr<Algorithm> make_algorithm(const std::string& name);
std::vector<std::string> algorithm_names();

// An algorithm registered from outside the library (a test's own: tests/job/one_rank.cpp), for
// the rest of the program's life: one line, a static object beside the algorithm's class.
using AlgorithmMaker = std::unique_ptr<Algorithm> (*)();
struct AlgorithmRegistration {
  AlgorithmRegistration(const std::string& name, AlgorithmMaker make);
};

// The whole job's footprint: every rank's, rank 0's gather, and the predicted end-to-end time.
Footprint footprint(const Algorithm& alg, const Problem& p, const Setting& s, const MachineModel& m);

}  // namespace tessera::algorithms
