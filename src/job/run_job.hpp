#pragma once
// `tessera run`: the distributed multiply, run by one harness for every algorithm
// (job/run_job.cpp): plan and its broadcast, the path rule, backend start, the inputs read (NaN/Inf
// refused), the algorithm's compute step (algorithms/algorithm.hpp), C through the output route
// (in place or gathered), committed under its name only when all went well, the report.
#include <cstdint>
#include <optional>
#include <string>

#include "comm/comm.hpp"
#include "core/error.hpp"

namespace tessera::job {

struct RunOptions {
  std::string a, b, c;  // FILE:/DATASET
  std::string report;   // JSON report path ("" = none)
  std::string grid;     // "PRxPC" or "" (chosen)
  std::string backend = "auto";
  std::string kernel = "auto";
  std::string dtype = "auto";      // auto | f32 | f64
  std::string algorithm = "auto";  // auto | panels | summa | ksplit (algorithms/choice.hpp)
  std::string comm = "auto";       // auto | host | cuda-aware | nccl (comm/path.hpp)
  std::int64_t panel_width = 0;    // summa's K panel width; 0: chosen (algorithms/summa.cpp)
  std::string baseline;            // kernel to compare against on the same block ("" = none)
  bool overwrite = false;
  bool quiet = false;                // no table on stdout
  bool verify = false;               // Freivalds' check of C before it is written (job/freivalds.hpp)
  bool allow_nonfinite = false;      // multiply inputs holding NaN / Inf instead of refusing them
  bool fail_on_nonfinite = false;    // a C holding NaN / Inf is an error (nothing written), not a warning
  bool dry_run = false;              // print the plan instead (commands/dry_run.hpp; run_job ignores it)
  std::int64_t m = 0, n = 0, k = 0;  // --dry-run without input files
  int ranks = 0;                     // --dry-run for this many ranks (default: the job's)
  int ranks_per_node = 0;            // --dry-run: on nodes of this many ranks each (0: one node)
  std::string gpu_memory;            // --gpu-memory: "" (what the GPU has free) or e.g. 512M, 8G, bytes
  std::string progress = "auto";     // on | off | auto (on when the predicted time exceeds 5 s)
  std::string write = "auto";        // how C reaches the file: auto | in-place | gather (job/output.hpp)
  std::string machine;               // --machine: the rates the model predicts with (algorithms/machine.hpp)
  std::string config;                // the TOML file the options came from ("" = none): read, never written
  // C = alpha op(A) op(B) + beta C_old. op: the stored matrix, or its transpose (--transpose-a:
  // A's dataset is K x M), read block by block as such (io/operand.hpp), never copied. C_old is
  // the output dataset as it is before the run; read only when beta != 0.
  bool transpose_a = false, transpose_b = false;
  double alpha = 1, beta = 0;
  // --repeat N --warmup W: the whole job runs W + N times in this launch, the report holds the
  // spread of the N counted runs (job/repeats.hpp). No warmup: 1 when repeat > 1, else 0.
  int repeat = 1;
  std::optional<int> warmup;
  // --timeout SECONDS: the longest a rank waits in MPI for the others before it ends itself
  // (comm/watchdog.hpp); 0: no bound. Not given: 30 s + 10 x the model's prediction of the run.
  std::optional<int> timeout;
};

// Thrown (on every rank) when --verify finds C wrong: nothing is written.
class VerificationFailed : public Error {
 public:
  using Error::Error;
};

// Collective over `comm`: the job, run once per warm-up and counted run (job/repeats.hpp).
// Returns normally on success; throws comm::JobError (agreed on by every rank) on any failure,
// VerificationFailed when --verify rejects C. With `report_json` (on every rank or none), the
// last run's JSON report (as --report writes it) is also left there, on every rank (libtessera).
void run_job(const RunOptions& opts, const comm::Comm& comm, std::string* report_json = nullptr);

}  // namespace tessera::job
