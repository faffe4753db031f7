#pragma once
// One run of `tessera run`'s job (internal to job/): the harness's steps as one class, whose
// members are what a step hands the next. Steps 0-3 (cores, plan, start, read) are in
// run_job.cpp, 4-7 (compute, verify, deliver, finish) in job_finish.cpp.
#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/machine.hpp"
#include "algorithms/row_streams.hpp"
#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_io.hpp"
#include "job/freivalds.hpp"
#include "job/job_options.hpp"
#include "job/launch.hpp"
#include "job/output.hpp"
#include "job/plan.hpp"
#include "job/progress.hpp"
#include "job/read_ahead.hpp"
#include "job/reads.hpp"
#include "job/repeats.hpp"
#include "job/run_job.hpp"
#include "report/report.hpp"

namespace tessera::job {

inline constexpr int kRoot = 0;

inline double seconds_since(double start) { return MPI_Wtime() - start; }

// TESSERA_TEST_HOLD=PHASE:SECONDS[:RANK] (PHASE read, compute or write): every rank (or rank RANK
// alone) waits that long as PHASE begins, so that a test can end a node's ranks inside that phase
// (tests/scripts/cluster_test.py: a node lost during read, compute or write), or leave the other
// ranks waiting for one (the watchdog: tests/scripts/faults.py). For tests only; unset, it costs a
// getenv per phase.
void hold_for_tests(const std::string& phase, int rank);

// The steps of one run of the job, in order (run()).
class Job {
 public:
  // Run `run` of `series` (the only one without --repeat / --warmup) of the product `o` (parsed
  // once, by job_options, before the runs). `launch`: one product of many (job/launch.hpp), which
  // shares its backend and output file and reports it; null: the launch's only product.
  Job(const JobOptions& o, const comm::Comm& comm, RunSeries& series, int run, std::string* report_json,
      Launch* launch = nullptr)
      : o_(o),
        comm_(comm),
        rank_(comm.rank()),
        series_(series),
        run_index_(run),
        started_(MPI_Wtime()),
        report_json_(report_json),
        launch_(launch) {}
  // Each step named for the watchdog's message (comm/watchdog.hpp): the step a rank waited in.
  void run() {
    comm::set_wait_step("start");
    share_cores();
    comm::set_wait_step("plan");
    plan();
    comm::set_wait_step("start");
    start();
    comm::set_wait_step("read");
    read();
    comm::set_wait_step("compute");
    compute();
    comm::set_wait_step("verify");
    verify();
    comm::set_wait_step("write");
    deliver();
    comm::set_wait_step("commit");
    finish();
  }

 private:
  void share_cores();
  int ranks_per_node() const;
  void plan();
  void settle();
  // --log-level debug: how far into the job's setup this step ends (what a product's setup costs).
  void setup_mark(const char* step) const;
  void bound_waits(double predicted_seconds) const;
  void start();
  void start_backend();
  void read();
  void compute();
  void verify();
  void deliver();
  void finish();
  void commit();
  void scan_old_c();
  void refuse_inputs();
  bool stage_gemm() const;

  const JobOptions& o_;  // every value typed: nothing here parses text
  const comm::Comm& comm_;
  const int rank_;
  RunSeries& series_;
  const int run_index_;
  const double started_;            // MPI_Wtime() when the job (this run of it) began
  std::string* const report_json_;  // the report as a value (libtessera), or null
  Launch* const launch_;            // many products: what they share (job/launch.hpp), or null
  report::JobReport job_;
  report::RankRecord me_;
  Plan plan_;
  algorithms::Problem problem_;
  algorithms::MachineModel machine_;
  algorithms::Setting setting_;  // settled by rank 0 with the plan; only read after
  algorithms::Share share_;
  std::unique_ptr<algorithms::Algorithm> algorithm_;
  std::unique_ptr<io::FileReservation> report_file_;  // rank 0: the report's space, taken up front
  std::unique_ptr<io::MatrixWriter> writer_;          // rank 0 only
  std::unique_ptr<OutputRoute> route_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<backend::Backend> be_;
  std::unique_ptr<algorithms::RankRun> run_;
  algorithms::RowStreams streams_;  // after the buffers its threads use (in run_): stopped before they go
  bool streaming_ = false;          // A streams in on the busy ranks: non-finite input is refused after the GEMM
  algorithms::StagedReads reads_;   // this rank's reads of A and B rows (whole blocks, or a staged GEMM's pieces)
  ReadTally tally_;                 // what they found (NaN/Inf) and took
  io::NonfiniteCount scan_old_c_;
  std::optional<FreivaldsResult> verified_;
  ReadAhead read_ahead_;  // B's first rows while the GPU starts (last: its thread uses share_, tally_)
};

}  // namespace tessera::job
