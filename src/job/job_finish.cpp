// The job harness's steps 4-7 (job/job.hpp; 0-3 in run_job.cpp): the algorithm's compute step,
// --verify, C leaving the ranks, then release, commit and the report.
#include <mpi.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/cleanup.hpp"
#include "io/hdf5_io.hpp"
#include "job/background_release.hpp"
#include "job/job.hpp"
#include "job/rank_report.hpp"
#include "job/refusals.hpp"
#include "job/result.hpp"
#include "job/run_provenance.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

// 4. The algorithm's compute step.
void Job::compute() {
  hold_for_tests("compute", rank_);
  algorithm_->compute(*run_);
  if (!streaming_) return;
  if (run_->staged) {
    for (auto& p : me_.phases)  // every read of A and B, all of them during the GEMM
      if (p.first == "read") p.second += tally_.seconds;
  } else if (run_->streams) {
    tally_.a = streams_.nonfinite();
    for (auto& p : me_.phases)  // all of A's reading, though most of it overlapped the GEMM
      if (p.first == "read") p.second += streams_.read_seconds();
  }
  refuse_inputs();
}

// With --beta: C_old's NaN/Inf are refused like A's and B's. The blocks added to C are read as C
// leaves (OutputRoute::add_old_c); this scan reads every rank's slice of C_old's rows once more, up
// front, so that all ranks refuse at the same step (not needed with --allow-nonfinite).
void Job::scan_old_c() {
  if ((o_.beta == 0 && o_.beta_imag == 0) || o_.allow_nonfinite) return;
  comm_.step([&] { scan_old_c_ = job::scan_old_c(o_, rank_, comm_.size(), problem_); });
}

void Job::refuse_inputs() {
  std::vector<Scanned> scans{{"A", o_.a, tally_.a, plan_.k}, {"B", o_.b, tally_.b, plan_.n}};
  if (o_.beta != 0 || o_.beta_imag != 0) scans.push_back({"C_old", {o_.c, false}, scan_old_c_, plan_.n});
  refuse_nonfinite(comm_, scans, o_.allow_nonfinite);
}

// 5. Optional: Freivalds' check on the blocks still in memory, before anything is written.
void Job::verify() {
  if (!o_.asked.verify) return;
  const double t = MPI_Wtime();
  const partition::Partition part(plan_.m, plan_.n, plan_.k, comm_.size(), plan_.grid);
  verified_ = freivalds(comm_, part, plan_.dtype, plan_.dtype, run_->a.data(), run_->b.data(), run_->c.data(),
                        kFreivaldsVectors, kFreivaldsSafety, 0x7e55e7a);
  if (share_.active) me_.phases.emplace_back("verify", seconds_since(t));
  if (!verified_->passed) throw VerificationFailed("result not written: " + verified_->summary);
}

// 6. C leaves the rank, as the algorithm sends it.
void Job::deliver() {
  hold_for_tests("write", rank_);
  algorithm_->deliver(*run_);
  me_.write_bytes = route_->bytes_written();
}

// 7. Release, commit, report.
void Job::finish() {
  // Freeing device memory, page-locked memory (unregistering it) and NCCL groups takes time too:
  // done beside rank 0's commit, which mostly waits for the disk (fsync).
  BackgroundRelease releasing(be_.get(), [this] {
    algorithm_->release();
    run_->a = {};
    run_->b = {};
    run_->c = {};
  });
  commit();
  const double release_s = releasing.wait();
  if (share_.active) me_.phases.emplace_back("release", release_s);
  progress_->finish();
  if (verified_)
    job_.verification = {{"method", "freivalds"},
                         {"passed", verified_->passed},
                         {"vectors", verified_->vectors},
                         {"max_relative_residual", verified_->max_relative},
                         {"max_bound_ratio", verified_->max_ratio}};
  gather_records(comm_, job_, std::move(me_), started_, series_.began(), be_.get());
  if (launch_ != nullptr) {  // one product of many: the launch reports it and keeps the backend
    launch_->finished(job_, share_.active ? std::move(be_) : nullptr);
    return;
  }
  series_.record(run_index_, job_);
  if (!series_.last(run_index_)) return;  // the table and the report: once, for the last run
  job_.repeats = series_.repeats();
  const auto verdict = [&] {
    if (verified_ && !o_.quiet) std::printf("%s\n", verified_->summary.c_str());
  };
  publish_report(o_, comm_, job_, verdict, report_json_);
}

// Rank 0 labels and commits the result: only now does the output file appear.
void Job::commit() {
  job_.m = plan_.m;
  job_.n = plan_.n;
  job_.k = plan_.k;
  job_.dtype = dtype_name(plan_.dtype);
  job_.c_dtype = io::stored_name(plan_.stored, plan_.dtype);
  const partition::GridShape grid = algorithm_->grid(problem_);
  job_.grid_rows = grid.rows;
  job_.grid_cols = grid.cols;
  const io::NonfiniteCount c_nonfinite = route_->nonfinite_written(comm_);  // of every rank's writes
  // From here a fatal signal (Slurm's time limit, scancel, Ctrl-C) waits on every rank for the
  // commit's outcome. Committed, C is this run's result for good: the signal has nothing left to
  // stop, so the run finishes, says so on stderr and in the report, and exits 0 (a retry would
  // apply --beta twice). A failed commit lets it act as it would have: rollback, exit by signal.
  const io::SignalsHeld held;
  comm_.step([&] {
    if (rank_ != kRoot) return;
    const double t = MPI_Wtime();
    job_.wall_seconds = seconds_since(started_);
    const std::string split = algorithm_->busy_ranks(problem_) > grid.size() && grid.size() == 1
                                  ? "1x1x" + std::to_string(comm_.size())  // K split over the ranks
                                  : grid.str();
    writer_->set_attributes(result_attributes(job_, split));
    writer_->set_attributes(provenance_attributes(job_));
    writer_->set_attributes(run_->attributes);
    if (verified_)
      writer_->set_attributes({io::Attribute::of("verified", verified_->passed ? "passed" : "failed"),
                               io::Attribute::of("verify_method", "freivalds"),
                               io::Attribute::of("verify_vectors", std::int64_t{verified_->vectors}),
                               io::Attribute::of("verify_max_relative_residual", verified_->max_relative)});
    commit_result(o_, *writer_, job_, c_nonfinite);
    writer_.reset();
    // Attribute writing and the rename are part of the write phase.
    for (auto& p : me_.phases)
      if (p.first == "write") p.second += seconds_since(t);
  });
  if (!io::fatal_signal_pending()) return;
  const bool more_runs = !series_.last(run_index_);
  // With more --repeat runs to come the signal stays pending: released below, it ends the series.
  const int sig = more_runs ? io::pending_fatal_signal() : io::take_pending_signal();
  if (rank_ != kRoot) return;
  const std::string name = sig == SIGTERM   ? "SIGTERM"
                           : sig == SIGINT  ? "SIGINT"
                           : sig == SIGHUP  ? "SIGHUP"
                           : sig == SIGXFSZ ? "SIGXFSZ"
                                            : "a fatal signal";
  const std::string what = more_runs
                               ? name + " arrived while C was being committed; the commit completed, so " +
                                     o_.c.text() + " holds the result of run " + std::to_string(run_index_ + 1) +
                                     " of the series, and the signal now ends the process before the next run starts"
                               : name + " arrived while C was being committed; the commit completed, so " +
                                     o_.c.text() + " holds this run's result and the run ends normally (exit 0)";
  std::fprintf(stderr, "tessera: note: %s\n", what.c_str());
  std::fflush(stderr);
  job_.warnings.push_back(what);
}

}  // namespace tessera::job
