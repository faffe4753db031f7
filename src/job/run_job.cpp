// The job harness: every algorithm runs through these steps, written once.
//   1. plan       rank 0 checks every path, inspects the inputs, chooses the algorithm (and the
//                 ranks it uses) from the footprint model, creates the output; all ranks learn it
//   2. start      the output route, the backend (GPU start-up), the algorithm's agreements
//                 (communication path, panel width, bands), host memory refused up front
//   3. read       each rank reads its share of A and B; NaN/Inf refused
//   4. compute    the algorithm's compute step (C may leave the rank meanwhile)
//   5. verify     --verify: Freivalds' check before anything is committed (panels)
//   6. deliver    C leaves the rank: in place, or gathered to rank 0
//   7. finish     release (page-locked memory freed beside the commit), commit, report
// --repeat / --warmup run these steps again, the whole job each time (job/repeats.hpp).
#include "job/run_job.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "algorithms/choice.hpp"
#include "algorithms/machine.hpp"
#include "algorithms/row_streams.hpp"
#include "backend/backend.hpp"
#include "comm/cpu_share.hpp"
#include "comm/mpi_network.hpp"
#include "comm/mpi_start.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "io/atomic_file.hpp"
#include "io/cleanup.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "job/background_release.hpp"
#include "job/freivalds.hpp"
#include "job/job_paths.hpp"
#include "job/output.hpp"
#include "job/plan.hpp"
#include "job/progress.hpp"
#include "job/rank_backend.hpp"
#include "job/rank_report.hpp"
#include "job/refusals.hpp"
#include "job/repeats.hpp"
#include "job/result.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"

namespace tessera::job {

namespace {

constexpr int kRoot = 0;

double seconds_since(double start) { return MPI_Wtime() - start; }

// TESSERA_TEST_HOLD=PHASE:SECONDS (PHASE read, compute or write): every rank waits that long as
// PHASE begins, so that a test can end a node's ranks inside that phase (tests/scripts/cluster_test.py:
// a node lost during read, compute or write). For tests only; unset, it costs a getenv per phase.
void hold_for_tests(const std::string& phase) {
  const char* value = std::getenv("TESSERA_TEST_HOLD");
  if (value == nullptr) return;
  const std::string text = value;
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.substr(0, colon) != phase) return;
  const double seconds = std::atof(text.c_str() + colon + 1);
  log::info("TESSERA_TEST_HOLD: holding in " + phase + " for " + text.substr(colon + 1) + " s");
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// x *= factor over `count` elements of `dtype`.
void scale(void* data, DType dtype, std::int64_t count, double factor) {
  if (dtype == DType::f32) {
    auto* x = static_cast<float*>(data);
    const auto f = static_cast<float>(factor);
    for (std::int64_t i = 0; i < count; ++i) x[i] *= f;
  } else {
    auto* x = static_cast<double*>(data);
    for (std::int64_t i = 0; i < count; ++i) x[i] *= factor;
  }
}

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) log::note(note);
}

class Job {
 public:
  // Run `run` of `series` (the only one without --repeat / --warmup).
  Job(const RunOptions& o, const comm::Comm& comm, RunSeries& series, int run)
      : o_(o), comm_(comm), rank_(comm.rank()), series_(series), run_index_(run), started_(MPI_Wtime()) {}
  void run() {
    share_cores();
    plan();
    start();
    read();
    compute();
    verify();
    deliver();
    finish();
  }

 private:
  void share_cores();
  int ranks_per_node() const;
  void plan();
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
  void prepare_reads();

  const RunOptions& o_;
  const comm::Comm& comm_;
  const int rank_;
  RunSeries& series_;
  const int run_index_;
  const double started_;  // MPI_Wtime() when the job (this run of it) began
  report::JobReport job_;
  report::RankRecord me_;
  Plan plan_;
  algorithms::Problem problem_;
  algorithms::MachineModel machine_;
  algorithms::Options options_;
  algorithms::Share share_;
  std::unique_ptr<algorithms::Algorithm> algorithm_;
  std::unique_ptr<io::FileReservation> report_file_;  // rank 0: the report's space, taken up front
  std::unique_ptr<io::MatrixWriter> writer_;          // rank 0 only
  std::unique_ptr<OutputRoute> route_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<backend::Backend> be_;
  std::string kernel_;
  std::unique_ptr<algorithms::RankRun> run_;
  algorithms::RowStreams streams_;  // after the buffers its threads use (in run_): stopped before they go
  bool streaming_ = false;          // A streams in on the busy ranks: non-finite input is refused after the GEMM
  algorithms::StagedReads reads_;   // this rank's reads of A and B rows (whole blocks, or a staged GEMM's pieces)
  double reads_seconds_ = 0;        // seconds spent in them
  io::NonfiniteCount scan_a_, scan_b_, scan_old_c_;
  std::optional<FreivaldsResult> verified_;
};

// 0. Each rank's share of its node's cores (comm/cpu_share.hpp), before any of its threads start:
// the BLAS's, the readers' and the writers'.
void Job::share_cores() {
  const comm::CpuShare cpus = comm::widen_cpu_binding(comm_);
  if (cpus.after > cpus.before) backend::use_cpu_threads(cpus.after);
  // Ranks of a node unbound (each may run on every core): leave a core to each of the others, or
  // one waiting in MPI (which spins) makes one of this rank's reader threads a straggler.
  const int others = comm_.node().local_size - 1;
  const int all = static_cast<int>(std::thread::hardware_concurrency());
  io::set_io_threads(others > 0 && cpus.after >= all && all > others ? cpus.after - others : cpus.after);
  if (!cpus.note.empty()) log::info(cpus.note);  // every run of 2 ranks on a node would print it
}

// The model's ranks per node (algorithms::Problem): 0 when every rank is on one node. The ranks'
// host names, gathered in share_cores(): the same on every rank.
int Job::ranks_per_node() const {
  const comm::NodeInfo node = comm_.node();
  return node.count > 1 ? (comm_.size() + node.count - 1) / node.count : 0;
}

// 1. Rank 0 validates the inputs and the output location, chooses, then tells everyone the plan.
void Job::plan() {
  job_.version = kVersion;
  job_.started_at = report::utc_timestamp();
  job_.a = o_.a;
  job_.b = o_.b;
  job_.c = o_.c;
  job_.nranks = comm_.size();
  job_.transpose_a = o_.transpose_a;
  job_.transpose_b = o_.transpose_b;
  job_.alpha = o_.alpha;
  job_.beta = o_.beta;
  std::vector<std::string> stale;  // leftovers of earlier runs, inputs read as a fill value (rank 0)
  nlohmann::json decided;
  comm_.step([&] {
    if (rank_ != kRoot) return;
    // The one rule for every path (job/job_paths.hpp), before anything is read or computed.
    GuardedPaths paths = guard_run_paths(o_);
    stale = std::move(paths.notes);
    Plan plan = Plan::make(o_, comm_.size());
    const algorithms::MachineModel machine = machine_model(o_);
    const algorithms::Choice choice = algorithms::choose(
        choice_request(o_), {plan.m, plan.n, plan.k, plan.dtype, comm_.size(), plan.grid, ranks_per_node()},
        choice_environment(o_), machine);
    plan.grid = choice.problem.grid;  // the model may leave ranks idle
    const auto is_input = [&paths](const std::string& p) { return paths.guard.is_read(p); };
    for (const auto& file : {io::DatasetRef::parse(o_.c).file, o_.report})
      if (!file.empty())
        for (auto& note : io::clean_stale_temporaries(file, is_input)) stale.push_back(std::move(note));
    report_file_ = reserve_report(o_.report, comm_.size());
    // A later run replaces what the first wrote (job/repeats.hpp).
    writer_ = std::make_unique<io::MatrixWriter>(io::DatasetRef::parse(o_.c), plan.m, plan.n, plan.dtype,
                                                 series_.write_options(run_index_));
    for (const auto& note : writer_->notes()) stale.push_back(note);
    if (run_index_ == 0) series_.first_output(*writer_);
    decided = {{"plan", plan.encode()},
               {"algorithm", choice.algorithm},
               {"machine", machine.to_json()},
               {"predicted", choice.footprint.predicted_seconds()},
               {"communication", choice.footprint.predicted.communication},
               {"bound", choice.footprint.predicted.bound()},
               {"bands", bands_asked()}};
  });
  print_notes(stale);
  decided = nlohmann::json::parse(comm_.broadcast(decided.dump(), kRoot));
  plan_ = Plan::decode(decided["plan"].get<std::string>());
  machine_ = algorithms::MachineModel::from_json(decided["machine"], "rank 0's machine model");
  algorithm_ = algorithms::make_algorithm(decided["algorithm"].get<std::string>());
  problem_ = {plan_.m, plan_.n, plan_.k, plan_.dtype, comm_.size(), plan_.grid, ranks_per_node()};
  share_ = algorithm_->share(problem_, rank_);
  job_.algorithm = algorithm_->name();
  job_.predicted = {{"seconds", decided["predicted"]},
                    {"bound", decided["bound"]},
                    {"machine", machine_.name},
                    {"communication_seconds", decided["communication"]}};
  options_.comm = o_.comm;
  options_.panel_width = o_.panel_width;
  options_.baseline = o_.baseline;
  options_.grid = o_.grid;
  options_.verify = o_.verify;
  options_.gpu_memory = parse_bytes(o_.gpu_memory, "--gpu-memory");
  options_.bands = decided["bands"].get<int>();
}

// 2. The output route, the backend, the algorithm's agreements, host memory refused up front.
void Job::start() {
  // Every rank writes its own C into the output, or rank 0 gathers them (job/output.hpp).
  route_ = OutputRoute::choose(comm_, writer_.get(), o_.write, share_.active, plan_.dtype);
  if (o_.beta != 0) route_->add_old_c(io::DatasetRef::parse(o_.c), o_.beta);  // as each block of C leaves
  job_.write = route_->description();
  bool show_progress = o_.progress == "on";
  if (o_.progress == "auto" && rank_ == kRoot) show_progress = job_.predicted["seconds"].get<double>() > 5;
  progress_ = std::make_unique<Progress>(rank_ == kRoot && show_progress);
  const partition::GridShape grid = algorithm_->grid(problem_);
  progress_->step("plan: " + algorithm_->name() +
                  (algorithm_->gathers_blocks() ? " on a " + grid.str() + " grid, "
                                                : " over " + std::to_string(comm_.size()) + " rank(s), ") +
                  dtype_name(plan_.dtype));
  me_.rank = rank_;
  me_.active = share_.active;
  me_.host = comm_.node().host;
  job_.network = comm::job_network(comm_);
  job_.network["mpi_start"] = comm::mpi_start_choice().why;
  if (share_.active) {
    me_.block_row = share_.block_row;
    me_.block_col = share_.block_col;
    me_.row_begin = share_.rows.begin;
    me_.row_end = share_.rows.end;
    me_.col_begin = share_.cols.begin;
    me_.col_end = share_.cols.end;
    me_.flops = share_.flops;
  }
  start_backend();
  const auto progress = [this](const std::string& what) { progress_->step(what); };
  route_->use(be_.get(), progress);
  run_ = std::make_unique<algorithms::RankRun>(comm_, *be_, kernel_, problem_, options_, share_, machine_, *route_, me_,
                                               job_, progress);
  run_->work = progress_.get();
  algorithm_->start(*run_);
  // Host memory: what the ranks of each node hold against the node's memory.
  const algorithms::RankFootprint mine = algorithm_->rank_footprint(problem_, run_->setting, machine_, rank_);
  refuse_over_node_memory(comm_, static_cast<double>(mine.host_bytes), algorithm_->holds(problem_),
                          algorithm_->memory_advice());
  me_.phases.emplace_back("setup", seconds_since(started_));  // plan, output, backend (GPU start-up)
}

// The rank's backend (GPU selection happens here), and the kernel `auto` stands for on its share.
// A rank left idle touches no device: it learns the job's backend from rank 0 (always busy) and
// takes an idle one of that name, so a second process starts no GPU driver beside the busy ones.
void Job::start_backend() {
  const auto node = comm_.node();
  comm_.step([&] {
    if (!share_.active) return;
    be_ = make_rank_backend(o_.backend, {node.local_rank, node.local_size, options_.gpu_memory}, o_.kernel, plan_.dtype,
                            share_.gemm_m, share_.gemm_n, share_.gemm_k, me_, kernel_);
    if (!o_.baseline.empty()) {
      const auto names = be_->kernels();
      if (std::find(names.begin(), names.end(), o_.baseline) == names.end())
        throw InputError("unknown --baseline kernel '" + o_.baseline + "' for the " + be_->name() + " backend");
    }
  });
  job_.backend = comm_.broadcast(be_ ? be_->name() : std::string(), kRoot);
  job_.kernel = comm_.broadcast(kernel_, kRoot);
  if (!share_.active) {
    be_ = backend::make_idle_backend(job_.backend);
    me_.device = be_->device();
    me_.device_id = be_->device_id();
    kernel_ = job_.kernel;
  }
}

// 3. Each rank reads only its share: the blocks of A and B the algorithm asks for. A may stream
// in while the GEMM runs (panels without --baseline; rank 0 decides, so every rank refuses
// non-finite input at the same step).
void Job::read() {
  hold_for_tests("read");
  const std::size_t es = dtype_size(plan_.dtype);
  int chunks = 1;
  comm_.step([&] {
    if (rank_ != kRoot || !o_.baseline.empty() || !share_.a_may_stream) return;
    const algorithms::Share tallest = algorithm_->share(problem_, 0);  // block-row 0 is the tallest
    const std::int64_t rows = tallest.a_rows.size();
    chunks = static_cast<int>(std::min<std::int64_t>(
        algorithms::stream_chunks(static_cast<std::size_t>(rows * tallest.a_cols.size()) * es), rows));
  });
  chunks = std::stoi(comm_.broadcast(std::to_string(chunks), kRoot));
  job_.stream_chunks = chunks;
  streaming_ = chunks > 1;  // the same on every rank, idle ones included: they refuse at the same step
  progress_->step("reading A and B on " + std::to_string(algorithm_->busy_ranks(problem_)) + " rank(s)");
  const algorithms::Share& s = share_;
  comm_.step([&] {
    if (!s.active) return;
    const double t = MPI_Wtime();
    prepare_reads();
    if (stage_gemm()) {  // nothing read yet: the backend asks for the rows as it goes (compute)
      run_->staged = &reads_;
      me_.staged = true;
      me_.read_bytes =
          static_cast<std::int64_t>((s.a_rows.size() * s.a_cols.size() + s.b_rows.size() * s.b_cols.size()) * es);
      me_.phases.emplace_back("read", seconds_since(t));
      return;
    }
    run_->a = be_->allocate_host(static_cast<std::size_t>(s.a_rows.size() * s.a_cols.size()) * es);
    run_->b = be_->allocate_host(static_cast<std::size_t>(s.b_rows.size() * s.b_cols.size()) * es);
    run_->c = be_->allocate_host(static_cast<std::size_t>(s.c_elements) * es);
    if (s.zero_c && !run_->c.empty()) std::memset(run_->c.data(), 0, run_->c.size());
    // Every block of A and B is read here (or by the streams).
    if (s.b_rows.size() > 0 && s.b_cols.size() > 0) reads_.b(0, s.b_rows.size(), run_->b.data());
    if (chunks > 1) {
      streams_.start_reading(operand_a(o_), s.a_rows.begin, s.a_rows.size(), plan_.k, plan_.dtype, run_->a.data(),
                             chunks, s.count_a);
      run_->streams = &streams_;
    } else if (s.a_rows.size() > 0 && s.a_cols.size() > 0) {
      reads_.a(0, s.a_rows.size(), run_->a.data());
    }
    me_.read_bytes = static_cast<std::int64_t>(run_->a.size() + run_->b.size());
    me_.phases.emplace_back("read", seconds_since(t));  // streaming: B, and A's reading that ran before the GEMM
  });
  scan_old_c();
  if (!streaming_) refuse_inputs();
}

// Whether this rank's GEMM is staged (backend.hpp's StagedProblem): A and B read piece by piece
// into the backend's own buffers and C written as it comes back, none of them whole in host
// memory. Where the algorithm streams A (panels, decided job-wide), this rank writes its own C in
// place, nothing needs the whole blocks afterwards (--verify, --baseline) and the backend stages
// a GEMM of this shape (a GPU with room for B). TESSERA_STAGED=0 turns it off (comparisons), =1
// forces it (the CPU then reads the blocks whole through the same calls: tests).
bool Job::stage_gemm() const {
  if (!streaming_ || !share_.a_may_stream || !route_->in_place() || !route_->sink() || o_.verify ||
      !o_.baseline.empty())
    return false;
  const char* env = std::getenv("TESSERA_STAGED");
  const std::string want = env ? env : "";
  if (want == "0") return false;
  if (want == "1") return true;
  if (!want.empty()) throw InputError("TESSERA_STAGED='" + want + "' is not 0 or 1 (unset: the backend decides)");
  return be_->stages(plan_.dtype, share_.rows.size(), share_.cols.size(), plan_.k);
}

// This rank's reads: rows [row0, row0 + rows) of its A block or B block (all their columns), as
// op(A) and op(B) in their own coordinates, whether the file holds them or their transposes
// (io/operand.hpp); each piece's NaN/Inf counted (every element by one rank) and B's scaled by
// alpha (after the count: the refusal names the file's values). read() calls them once for whole
// blocks; a staged GEMM's backend calls them piece by piece, in row order, on this thread.
void Job::prepare_reads() {
  const algorithms::Share& s = share_;
  const DType dtype = plan_.dtype;
  reads_.a = [this, &s, dtype, op = operand_a(o_)](std::int64_t row0, std::int64_t rows, void* into) {
    const double t = MPI_Wtime();
    const std::int64_t cols = s.a_cols.size();
    io::read_operand_block(op, s.a_rows.begin + row0, rows, s.a_cols.begin, cols, dtype, into);
    if (s.count_a)
      scan_a_.merge(scan_nonfinite(into, dtype, rows, cols, s.a_rows.begin + row0, s.a_cols.begin, plan_.k));
    reads_seconds_ += seconds_since(t);
  };
  reads_.b = [this, &s, dtype, op = operand_b(o_)](std::int64_t row0, std::int64_t rows, void* into) {
    const double t = MPI_Wtime();
    const std::int64_t cols = s.b_cols.size();
    io::read_operand_block(op, s.b_rows.begin + row0, rows, s.b_cols.begin, cols, dtype, into);
    if (s.count_b)
      scan_b_.merge(scan_nonfinite(into, dtype, rows, cols, s.b_rows.begin + row0, s.b_cols.begin, plan_.n));
    if (o_.alpha != 1) scale(into, dtype, rows * cols, o_.alpha);  // B's block is the smaller
    reads_seconds_ += seconds_since(t);
  };
}

// 4. The algorithm's compute step.
void Job::compute() {
  hold_for_tests("compute");
  algorithm_->compute(*run_);
  if (!streaming_) return;
  if (run_->staged) {
    for (auto& p : me_.phases)  // every read of A and B, all of them during the GEMM
      if (p.first == "read") p.second += reads_seconds_;
  } else if (run_->streams) {
    scan_a_ = streams_.nonfinite();
    for (auto& p : me_.phases)  // all of A's reading, though most of it overlapped the GEMM
      if (p.first == "read") p.second += streams_.read_seconds();
  }
  refuse_inputs();
}

// With --beta: C_old's NaN/Inf are refused like A's and B's. The blocks added to C are read as C
// leaves (OutputRoute::add_old_c); this scan reads every rank's slice of C_old's rows once more, up
// front, so that all ranks refuse at the same step (not needed with --allow-nonfinite).
void Job::scan_old_c() {
  if (o_.beta == 0 || o_.allow_nonfinite) return;
  comm_.step([&] {
    const partition::Range rows = partition::split(plan_.m, comm_.size(), rank_);
    const std::size_t row_bytes = static_cast<std::size_t>(plan_.n) * dtype_size(plan_.dtype);
    // In pieces of about 64 MiB: the scan needs no more of C_old in memory at once.
    const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>((std::size_t{64} << 20) / row_bytes));
    std::vector<unsigned char> old(static_cast<std::size_t>(std::min(step, rows.size())) * row_bytes);
    const io::DatasetRef ref = io::DatasetRef::parse(o_.c);
    for (std::int64_t r = rows.begin; r < rows.end; r += step) {
      const std::int64_t count = std::min(step, rows.end - r);
      io::read_block(ref, r, count, 0, plan_.n, plan_.dtype, old.data());
      scan_old_c_.merge(scan_nonfinite(old.data(), plan_.dtype, count, plan_.n, r, 0, plan_.n));
    }
  });
}

void Job::refuse_inputs() {
  std::vector<Scanned> scans{{"A", operand_a(o_), scan_a_, plan_.k}, {"B", operand_b(o_), scan_b_, plan_.n}};
  if (o_.beta != 0) scans.push_back({"C_old", {io::DatasetRef::parse(o_.c), false}, scan_old_c_, plan_.n});
  refuse_nonfinite(comm_, scans, o_.allow_nonfinite);
}

// 5. Optional: Freivalds' check on the blocks still in memory, before anything is written.
void Job::verify() {
  if (!o_.verify) return;
  const double t = MPI_Wtime();
  const partition::Partition part(plan_.m, plan_.n, plan_.k, comm_.size(), plan_.grid);
  verified_ = freivalds(comm_, part, plan_.dtype, plan_.dtype, run_->a.data(), run_->b.data(), run_->c.data(),
                        kFreivaldsVectors, kFreivaldsSafety, 0x7e55e7a);
  if (share_.active) me_.phases.emplace_back("verify", seconds_since(t));
  if (!verified_->passed) throw VerificationFailed("result not written: " + verified_->summary);
}

// 6. C leaves the rank, as the algorithm sends it.
void Job::deliver() {
  hold_for_tests("write");
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
  series_.record(run_index_, job_);
  if (!series_.last(run_index_)) return;  // the table and the report: once, for the last run
  job_.repeats = series_.repeats();
  publish_report(o_, comm_, job_, [&] {
    if (verified_ && !o_.quiet) std::printf("%s\n", verified_->summary.c_str());
  });
}

// Rank 0 labels and commits the result: only now does the output file appear.
void Job::commit() {
  job_.m = plan_.m;
  job_.n = plan_.n;
  job_.k = plan_.k;
  job_.dtype = dtype_name(plan_.dtype);
  const partition::GridShape grid = algorithm_->grid(problem_);
  job_.grid_rows = grid.rows;
  job_.grid_cols = grid.cols;
  const io::NonfiniteCount c_nonfinite = route_->nonfinite_written(comm_);  // of every rank's writes
  comm_.step([&] {
    if (rank_ != kRoot) return;
    const double t = MPI_Wtime();
    job_.wall_seconds = seconds_since(started_);
    const std::string split = algorithm_->busy_ranks(problem_) > grid.size() && grid.size() == 1
                                  ? "1x1x" + std::to_string(comm_.size())  // K split over the ranks
                                  : grid.str();
    writer_->set_attributes(result_attributes(job_, split));
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
}

}  // namespace

void run_job(const RunOptions& o, const comm::Comm& comm) {
  comm.step([&] { check_repeat_options(o); });  // before anything is read
  RunSeries series(o, MPI_Wtime());
  for (int run = 0; run < series.size(); ++run) {
    if (series.size() > 1 && comm.rank() == kRoot && !o.quiet) {
      std::printf("tessera: %s\n", series.name(run).c_str());
      std::fflush(stdout);
    }
    Job(o, comm, series, run).run();
  }
}

}  // namespace tessera::job
