#include "job/pipeline.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "partition/partition.hpp"
#include "io/cleanup.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"
#include "job/rank_backend.hpp"
#include "job/refusals.hpp"
#include "job/result.hpp"
#include "job/dryrun.hpp"
#include "job/freivalds.hpp"
#include "job/background_release.hpp"
#include "job/choose_algorithm.hpp"
#include "job/gather.hpp"
#include "job/job_start.hpp"
#include "job/rank_report.hpp"
#include "job/job_paths.hpp"
#include "job/ksplit.hpp"
#include "job/output.hpp"
#include "job/stream.hpp"
#include "job/summa.hpp"
#include "job/plan.hpp"
#include "job/progress.hpp"

#include <fmt/format.h>

namespace tessera::job {

namespace {

constexpr int kRoot = 0;

class Stopwatch {
 public:
  Stopwatch() : start_(MPI_Wtime()) {}
  double seconds() const { return MPI_Wtime() - start_; }
  double started() const { return start_; }

 private:
  double start_;
};

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) log::note(note);
}

}  // namespace

void run_job(const RunOptions& o, const comm::Comm& comm) {
  const Stopwatch wall;
  const int rank = comm.rank();
  report::JobReport job;
  job.version = kVersion;
  job.started_at = report::utc_timestamp();
  job.a = o.a;
  job.b = o.b;
  job.c = o.c;
  job.nranks = comm.size();

  // 1. Rank 0 validates the inputs and the output location, then tells everyone the plan.
  Plan plan;
  std::unique_ptr<io::FileReservation> report_file;  // rank 0: the report's space, taken up front
  std::unique_ptr<io::MatrixWriter> writer;  // rank 0 only
  std::vector<std::string> stale;            // leftovers of earlier runs, inputs read as a fill value (rank 0)
  std::string algorithm;                     // decided by rank 0 (job/ksplit.hpp)
  comm.step([&] {
    if (rank != kRoot) return;
    // The one rule for every path (job/job_paths.hpp), before anything is read or computed.
    GuardedPaths paths = guard_run_paths(o);
    stale = std::move(paths.notes);
    plan = Plan::make(o, comm.size());
    const bool gpu = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
    algorithm = choose_algorithm(o, gpu, comm::nccl_compiled(), comm.size(), plan.m, plan.n, plan.k,
                                 plan.grid);
    io::WriteOptions wo;
    wo.overwrite = o.overwrite;
    const auto is_input = [&paths](const std::string& p) { return paths.guard.is_read(p); };
    for (const auto& file : {io::DatasetRef::parse(o.c).file, o.report})
      if (!file.empty())
        for (auto& note : io::clean_stale_temporaries(file, is_input)) stale.push_back(std::move(note));
    report_file = reserve_report(o.report, comm.size());
    writer = std::make_unique<io::MatrixWriter>(io::DatasetRef::parse(o.c), plan.m, plan.n, plan.dtype, wo);
  });
  print_notes(stale);
  plan = Plan::decode(comm.broadcast(plan.encode(), kRoot));
  algorithm = comm.broadcast(algorithm, kRoot);
  if (algorithm != "panels") {
    JobStart start{plan.m, plan.n, plan.k, plan.dtype, plan.grid, std::move(writer), wall.started(), job};
    return algorithm == "ksplit" ? run_ksplit(o, comm, std::move(start)) : run_summa(o, comm, std::move(start));
  }

  const partition::Partition part(plan.m, plan.n, plan.k, comm.size(), plan.grid);
  const std::size_t esize = dtype_size(plan.dtype);
  // Every rank writes its own C block into the output, or rank 0 gathers them (job/output.hpp).
  const OutputRoute route = OutputRoute::choose(comm, writer.get(), o.write, part.active(rank));
  job.write = route.description();
  bool show_progress = o.progress == "on";
  if (o.progress == "auto" && rank == kRoot) {
    const bool gpu = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
    show_progress = plan_run(plan.m, plan.n, plan.k, plan.dtype, comm.size(), plan.grid, gpu).predicted_seconds > 5;
  }
  Progress progress(rank == kRoot && show_progress);
  progress.step("plan: " + plan.grid.str() + " grid, " + dtype_name(plan.dtype));

  report::RankRecord me;
  me.rank = rank;
  me.active = part.active(rank);
  const auto node = comm.node();
  me.host = node.host;
  if (me.active) describe_block(part, rank, me);

  // 2. Backend (GPU selection happens here). Idle ranks set one up too, to report placement.
  std::unique_ptr<backend::Backend> be;
  std::string kernel;
  comm.step([&] {
    // "auto": the backend's choice for this rank's block (the tuned winner on a GPU). Idle
    // ranks ask for the largest block, so the report names one kernel.
    const int who = me.active ? rank : 0;
    be = make_rank_backend(o.backend, {node.local_rank, node.local_size, parse_bytes(o.gpu_memory, "--gpu-memory")},
                           o.kernel, plan.dtype, part.rows_of(who).size(), part.cols_of(who).size(), plan.k, me, kernel);
    if (!o.baseline.empty()) {
      const auto names = be->kernels();
      if (std::find(names.begin(), names.end(), o.baseline) == names.end())
        throw InputError("unknown --baseline kernel '" + o.baseline + "' for the " + be->name() + " backend");
    }
  });
  // Ranks on one GPU (same host, name and PCI bus id, whatever CUDA_VISIBLE_DEVICES says) compete.
  if (const auto shared = shared_gpu_note(comm, me.device_id >= 0 ? me.host + "|" + me.device : std::string());
      !shared.empty() && rank == kRoot)
    me.warnings.push_back(shared + " (fewer GPUs than ranks on the node)");
  job.backend = comm.broadcast(be->name(), kRoot);
  job.kernel = comm.broadcast(kernel, kRoot);

  // Host memory, refused up front: what the ranks of each node hold against the node's memory.
  {
    const double need = static_cast<double>(part.a_elements(rank) + part.b_elements(rank) +
                                            part.c_elements(rank) * (o.baseline.empty() ? 1 : 2)) *
                        static_cast<double>(esize);
    refuse_over_node_memory(comm, need, "A rows, B columns and C block of a " + plan.grid.str() + " grid");
  }

  // Streaming (job/stream.hpp): A's rows are read while the GEMM multiplies those already there,
  // and rank 0 writes its C rows while the rest is computed. Not with --baseline (which runs the
  // GEMM more than once) or, for C, --verify (which checks C before any of it is written).
  // Rank 0 decides, so every rank refuses non-finite input at the same step.
  int chunks = 1;
  comm.step([&] {
    if (rank != kRoot || !o.baseline.empty()) return;
    const std::int64_t most_rows = part.rows(0).size();  // block-row 0 is the tallest (partition::split)
    chunks = static_cast<int>(
        std::min<std::int64_t>(stream_chunks(static_cast<std::size_t>(most_rows * plan.k) * esize), most_rows));
  });
  chunks = std::stoi(comm.broadcast(std::to_string(chunks), kRoot));
  const bool streaming = chunks > 1;
  job.stream_chunks = chunks;

  me.phases.emplace_back("setup", wall.seconds());  // plan, output, backend (GPU start-up)
  progress.step("reading A rows and B columns on " + std::to_string(part.grid().size()) + " rank(s)");
  // 3. Each active rank reads only its hyperslabs: A rows of its block-row, B columns of its block-column.
  backend::HostBuffer a, b, c, spare;  // spare: rank 0's second gather buffer (handover.hpp)
  RowStreams streams;                  // after the buffers its threads use: stopped before they go
  NonfiniteScan sa, sb;  // non-finite inputs: counted once per element (A on block-column 0, B on block-row 0)
  comm.step([&] {
    if (!me.active) return;
    const Stopwatch t;
    if (rank == kRoot && part.grid().size() > 1 && !route.in_place())
      spare = be->allocate_host(static_cast<std::size_t>(gather_spare_elements(part)) * esize);
    const auto rows = part.rows_of(rank), cols = part.cols_of(rank);
    a = be->allocate_host(static_cast<std::size_t>(part.a_elements(rank)) * esize);
    b = be->allocate_host(static_cast<std::size_t>(part.b_elements(rank)) * esize);
    c = be->allocate_host(static_cast<std::size_t>(part.c_elements(rank)) * esize);
    io::read_block(io::DatasetRef::parse(o.b), 0, plan.k, cols.begin, cols.size(), plan.dtype, b.data());
    if (part.block_row(rank) == 0)
      sb = scan_nonfinite(b.data(), plan.dtype, plan.k, cols.size(), 0, cols.begin, plan.n);
    if (streaming) {
      streams.start_reading(io::DatasetRef::parse(o.a), rows.begin, rows.size(), plan.k, plan.dtype, a.data(), chunks,
                            part.block_col(rank) == 0);
    } else {
      io::read_block(io::DatasetRef::parse(o.a), rows.begin, rows.size(), 0, plan.k, plan.dtype, a.data());
      if (part.block_col(rank) == 0)
        sa = scan_nonfinite(a.data(), plan.dtype, rows.size(), plan.k, rows.begin, 0, plan.k);
    }
    me.phases.emplace_back("read", t.seconds());  // streaming: B, and A's reading that ran before the GEMM
  });
  if (!streaming) refuse_nonfinite(comm, o.a, sa, plan.k, o.b, sb, plan.n, o.allow_nonfinite);

  progress.step("computing C blocks with " + kernel + (streaming ? " (A read and C written meanwhile)" : ""));
  // 4. Compute the local block.
  bool own_written = false;  // this rank's C block went to the output during the GEMM
  comm.step([&] {
    if (!me.active) return;
    const auto rows = part.rows_of(rank), cols = part.cols_of(rank);
    backend::GemmProblem prob{plan.dtype, rows.size(), cols.size(), plan.k, a.data(), b.data(), c.data()};
    if (!o.baseline.empty()) {
      backend::HostBuffer scratch = be->allocate_host(c.size());
      auto bprob = prob;
      bprob.c = scratch.data();
      be->gemm(o.baseline, bprob);  // warm-up: module load, handles
      // Compared like for like: kernel time on a GPU, the whole call on the CPU.
      double kernel_s = -1, total_s = 0;
      for (const auto& p : be->gemm(o.baseline, bprob)) {
        total_s += p.seconds;
        if (p.name == "kernel") kernel_s = p.seconds;
      }
      me.baseline_kernel = o.baseline;
      me.baseline_seconds = kernel_s >= 0 ? kernel_s : total_s;
      be->gemm(kernel, prob);  // the same warm-up for the measured kernel, so the comparison is fair
    }
    if (streaming) {
      prob.a_rows = streams.a_rows();
      if (route.sink() && !o.verify) {  // rank 0, or every rank when C is written in place
        streams.start_writing(route.sink(), rows.begin, cols.begin, rows.size(), cols.size(), plan.dtype, c.data());
        prob.c_rows = streams.c_rows();
      }
    }
    Progress::Watch watching;  // progress (rank 0): the rows of C the GEMM has finished
    if (prob.c_rows) watching = progress.watch(rows.size(), "rows of C", [r = prob.c_rows] { return r->wait_for(0); });
    const Stopwatch t;
    std::vector<backend::PhaseTime> phases;
    std::exception_ptr failed;
    try {
      phases = be->gemm(kernel, prob);
    } catch (...) {
      if (!streaming) throw;
      failed = std::current_exception();
    }
    const double compute_s = t.seconds();  // streaming: includes waiting for A's rows
    if (streaming) {
      streams.finish(failed);  // rethrows the first failure: reading A, the GEMM, writing C
      own_written = prob.c_rows != nullptr;
      sa = streams.nonfinite();
      for (auto& p : me.phases)  // all of A's reading, though most of it overlapped the GEMM
        if (p.first == "read") p.second += streams.read_seconds();
    }
    me.phases.emplace_back("compute", compute_s);
    for (const auto& p : phases)
      if (p.name != "compute") me.phases.emplace_back(p.name, p.seconds);
    for (const auto& w : be->warnings())  // e.g. that the block ran out of core
      if (std::find(me.warnings.begin(), me.warnings.end(), w) == me.warnings.end()) me.warnings.push_back(w);
  });
  if (streaming) refuse_nonfinite(comm, o.a, sa, plan.k, o.b, sb, plan.n, o.allow_nonfinite);

  // Optional: Freivalds' check on the blocks still in memory, before anything is written.
  std::optional<FreivaldsResult> verified;
  if (o.verify) {
    const Stopwatch t;
    verified = freivalds(comm, part, plan.dtype, plan.dtype, a.data(), b.data(), c.data(), kFreivaldsVectors,
                         kFreivaldsSafety, 0x7e55e7a);
    if (me.active) me.phases.emplace_back("verify", t.seconds());
    if (!verified->passed) throw VerificationFailed("result not written: " + verified->summary);
  }

  // 5. C to the file: every rank its own block (in place), or gathered to rank 0, which writes each
  // block as it arrives (memory: one block).
  if (route.in_place()) {
    progress.step("writing C blocks on every rank");
    const auto rows = me.active ? part.rows_of(rank) : partition::Range{}, cols = me.active ? part.cols_of(rank) : partition::Range{};
    route.write_own_block(comm, rows.begin, cols.begin, rows.size(), cols.size(), c.data(), own_written, me.phases);
  } else {
    progress.step("gathering and writing C");
    gather_and_write(comm, part, plan.dtype, c.data(), spare.empty() ? nullptr : spare.data(), writer.get(), progress,
                     me.phases, {}, own_written);
  }
  if (own_written)  // this rank's own block was written during the GEMM
    for (auto& p : me.phases)
      if (p.first == "write") p.second += streams.write_seconds();
  // Freeing page-locked memory takes time too (unregistering it): done beside rank 0's commit,
  // which mostly waits for the disk (fsync).
  BackgroundRelease releasing(be.get(), [&] {
    a = {};
    b = {};
    c = {};
    spare = {};
  });

  // 6. Rank 0 labels and commits the result: only now does the output file appear.
  job.m = plan.m;
  job.n = plan.n;
  job.k = plan.k;
  job.dtype = dtype_name(plan.dtype);
  job.grid_rows = plan.grid.rows;
  job.grid_cols = plan.grid.cols;
  const io::NonfiniteCount c_nonfinite = route.nonfinite_written(comm);  // of every rank's writes
  comm.step([&] {
    if (rank != kRoot) return;
    const Stopwatch t;
    job.wall_seconds = wall.seconds();
    writer->set_attributes(result_attributes(job, plan.grid.str()));
    if (verified)
      writer->set_attributes({io::Attribute::of("verified", verified->passed ? "passed" : "failed"),
                              io::Attribute::of("verify_method", "freivalds"),
                              io::Attribute::of("verify_vectors", std::int64_t{verified->vectors}),
                              io::Attribute::of("verify_max_relative_residual", verified->max_relative)});
    commit_result(o, *writer, job, c_nonfinite);
    writer.reset();
    // Attribute writing and the rename are part of the write phase.
    for (auto& p : me.phases)
      if (p.first == "write") p.second += t.seconds();
  });
  const double release_s = releasing.wait();
  if (me.active) me.phases.emplace_back("release", release_s);

  progress.finish();
  // 7. Report: rank 0 collects every rank's record.
  if (verified)
    job.verification = {{"method", "freivalds"}, {"passed", verified->passed}, {"vectors", verified->vectors},
                        {"max_relative_residual", verified->max_relative}, {"max_bound_ratio", verified->max_ratio}};
  publish_report(o, comm, job, std::move(me), wall.started(), be.get(), [&] {
    if (verified && !o.quiet) std::printf("%s\n", verified->summary.c_str());
  });
}

}  // namespace tessera::job
