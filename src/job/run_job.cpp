// The job harness: every algorithm runs through these steps, written once.
//   1. plan       rank 0 checks every path, inspects the inputs, creates the output; the ranks
//                 agree on the output route, and those the run may use on what they have (GPUs,
//                 NCCL, CUDA-aware MPI); rank 0 settles the run (the algorithm, the ranks it uses,
//                 its Setting) from the footprint model; all ranks learn it
//   2. start      the backend (GPU start-up; B's first rows read ahead meanwhile), the
//                 algorithm's check that the plan holds, host memory refused up front
//   3. read       each rank reads its share of A and B; NaN/Inf refused
//   4. compute    the algorithm's compute step (C may leave the rank meanwhile)
//   5. verify     --verify: Freivalds' check before anything is committed (panels)
//   6. deliver    C leaves the rank: in place, or gathered to rank 0
//   7. finish     release (page-locked memory freed beside the commit), commit, report
// --repeat / --warmup run these steps again, the whole job each time (job/repeats.hpp). The steps
// are job/job.hpp's Job: 0-3 here, 4-7 in job_finish.cpp.
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

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "algorithms/choice.hpp"
#include "algorithms/machine.hpp"
#include "algorithms/row_streams.hpp"
#include "backend/backend.hpp"
#include "comm/cpu_share.hpp"
#include "comm/mpi_network.hpp"
#include "comm/mpi_start.hpp"
#include "comm/watchdog.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/atomic_file.hpp"
#include "io/cleanup.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "job/background_release.hpp"
#include "job/environment.hpp"
#include "job/freivalds.hpp"
#include "job/job.hpp"
#include "job/job_paths.hpp"
#include "job/launch.hpp"
#include "job/output.hpp"
#include "job/plan.hpp"
#include "job/progress.hpp"
#include "job/rank_backend.hpp"
#include "job/rank_report.hpp"
#include "job/reads.hpp"
#include "job/refusals.hpp"
#include "job/repeats.hpp"
#include "job/result.hpp"
#include "job/run_provenance.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"

namespace tessera::job {

namespace {

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) log::note(note);
}

}  // namespace

void hold_for_tests(const std::string& phase, int rank) {
  const char* value = std::getenv("TESSERA_TEST_HOLD");
  if (value == nullptr) return;
  const std::string text = value;
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.substr(0, colon) != phase) return;
  const auto second = text.find(':', colon + 1);
  if (second != std::string::npos && std::atoi(text.c_str() + second + 1) != rank) return;
  const double seconds = std::atof(text.c_str() + colon + 1);
  log::info("TESSERA_TEST_HOLD: holding in " + phase + " for " + text.substr(colon + 1, second - colon - 1) + " s");
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

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

// 1. Rank 0 validates the inputs and the output location and creates the output; the ranks agree
// on the output route; rank 0 settles the run (settle: with what the ranks it uses have); every
// rank learns the plan.
void Job::plan() {
  if (o_.timeout) bound_waits(0);  // --timeout holds from the start; the model's bound from settle()
  job_ = job_header(o_, comm_.size());
  std::vector<std::string> stale;  // leftovers of earlier runs, inputs read as a fill value (rank 0)
  nlohmann::json planned;
  comm_.step([&] {
    if (rank_ != kRoot) return;
    // The one rule for every path (job/job_paths.hpp), before anything is read or computed.
    GuardedPaths paths = guard_run_paths(o_, launch_ != nullptr ? Guarding::product : Guarding::run);
    setup_mark("paths guarded");
    stale = std::move(paths.notes);
    const Plan plan = Plan::make(o_, comm_.size());
    setup_mark("inputs inspected");
    job_.inputs = input_records(o_);  // the provenance: the files as found before reading them
    setup_mark("inputs recorded");
    const algorithms::MachineModel machine = machine_model(o_);
    setup_mark("machine model");
    const auto is_input = [&paths](const std::string& p) { return paths.guard.is_read(p); };
    for (const auto& file : {o_.c.file, o_.report})
      if (!file.empty())
        for (auto& note : io::clean_stale_temporaries(file, is_input)) stale.push_back(std::move(note));
    if (launch_ == nullptr) report_file_ = reserve_report(o_.report, comm_.size());  // else the launch's
    setup_mark("stale files cleaned");
    // A later run replaces what the first wrote (job/repeats.hpp); one product of many may add its
    // C to the new file the launch commits once (job/launch.hpp).
    io::WriteOptions how = series_.write_options(run_index_);
    if (launch_ != nullptr) how.batch = launch_->batch_for(o_.c.file);
    how.matrices = plan.matrices;  // a batch of A: C the batch of their products
    how.stored = plan.stored;
    writer_ = std::make_unique<io::MatrixWriter>(o_.c, plan.m, plan.n, plan.dtype, how);
    setup_mark("output created");
    for (const auto& note : writer_->notes()) stale.push_back(note);
    if (plan.matrices > 0)
      stale.push_back(
          fmt::format("A is a batch of {} matrices of {}x{}: multiplied as their {}x{} stack by the B they "
                      "share, C written as the batch of the products ({}x{}x{})",
                      plan.matrices, plan.m / plan.matrices, plan.k, plan.m, plan.k, plan.matrices,
                      plan.m / plan.matrices, plan.n));
    if (run_index_ == 0) series_.first_output(*writer_);
    planned = {{"plan", plan.to_json()}, {"machine", machine.to_json()}};
  });
  print_notes(stale);
  planned = nlohmann::json::parse(comm_.broadcast(planned.dump(), kRoot));
  plan_ = Plan::from_json(planned["plan"]);
  machine_ = algorithms::MachineModel::from_json(planned["machine"], "rank 0's machine model");
  problem_ = {plan_.m, plan_.n, plan_.k, plan_.dtype, comm_.size(), plan_.grid, ranks_per_node()};
  problem_.compression = series_.compression();
  problem_.half_inputs = plan_.half_inputs;
  problem_.compress_threads = io::compression_threads(problem_.compression, io::io_threads());  // rank 0's
  // Where C goes (in place, or gathered): agreed before anything is settled.
  route_ = OutputRoute::choose(comm_, writer_.get(), o_.asked.write, plan_.dtype);
  setup_mark("plan broadcast, route agreed");
  settle();
}

// Rank 0 chooses the algorithm and the ranks it uses, and settles its Setting
// (algorithms/choice.hpp) for the environment the ranks it uses agreed on; every rank receives
// them, once. The environment is asked of the ranks the choice may use (job/environment.hpp), so
// that a rank left idle touches no device: first of those an asked algorithm uses (`auto`: rank 0
// alone; a CPU job: every rank, which touches none), then, while rank 0's choice uses more ranks
// than answered, of those it uses. A rank that answered may still be left idle by the choice made
// with its answer (a GPU it shares with a lower rank).
void Job::settle() {
  int answering = comm_.size();
  comm_.step([&] {
    if (o_.asked.backend == backend::Kind::cpu) return;
    answering = o_.asked.algorithm == "auto" ? 1 : algorithms::make_algorithm(o_.asked.algorithm)->busy_ranks(problem_);
  });
  nlohmann::json decided;
  for (;;) {
    algorithms::Environment env = agree_environment(o_.asked, comm_, answering);
    env.in_place_write = route_->in_place();
    comm_.step([&] {
      if (rank_ != kRoot) return;
      const algorithms::Choice choice = algorithms::choose(o_.asked, problem_, env, machine_);
      if (choice.footprint.busy > answering) {  // it uses ranks that have not said what they have
        decided = {{"ask", choice.footprint.busy}};
        return;
      }
      decided = {{"algorithm", choice.algorithm},
                 {"grid", {choice.problem.grid.rows, choice.problem.grid.cols}},  // the model may leave ranks idle
                 {"setting", choice.setting.to_json()},
                 {"predicted", choice.footprint.predicted_seconds()},
                 {"communication", choice.footprint.predicted.communication},
                 {"bound", choice.footprint.predicted.bound()}};
    });
    decided = nlohmann::json::parse(comm_.broadcast(decided.dump(), kRoot));
    if (!decided.contains("ask")) break;
    answering = decided["ask"].get<int>();  // more than before: at most every rank
  }
  algorithm_ = algorithms::make_algorithm(decided["algorithm"].get<std::string>());
  setup_mark("settled");
  plan_.grid = {decided["grid"][0].get<int>(), decided["grid"][1].get<int>()};
  problem_.grid = plan_.grid;
  setting_ = algorithms::Setting::from_json(decided["setting"]);
  share_ = algorithm_->share(problem_, rank_);
  if (!share_.active) route_->idle();
  job_.algorithm = algorithm_->name();
  job_.comm = setting_.comm_name();
  job_.backend = backend::kind_name(setting_.backend());
  job_.kernel = setting_.kernel;
  job_.settings = algorithm_->describe(setting_);
  job_.predicted = {{"seconds", decided["predicted"]},
                    {"bound", decided["bound"]},
                    {"machine", machine_.name},
                    {"communication_seconds", decided["communication"]}};
  bound_waits(decided["predicted"].get<double>());
}

void Job::setup_mark(const char* step) const {
  if (log::enabled(log::Level::debug))
    log::debug(fmt::format("setup: {} at {:.2f} ms", step, 1e3 * seconds_since(started_)));
}

// How long a rank may wait in MPI for the others (comm/watchdog.hpp): --timeout, else a bound
// from the model's prediction of this run, the same on every rank (rank 0's, broadcast).
void Job::bound_waits(double predicted_seconds) const {
  const double bound = comm::wait_bound(o_.timeout, predicted_seconds);
  const std::string why =
      o_.timeout ? "--timeout " + std::to_string(*o_.timeout)
                 : fmt::format("{:.0f} s + {:.0f} x the predicted {:.1f} s of the run; --timeout SECONDS sets it",
                               comm::kWaitFloorSeconds, comm::kWaitModelFactor, predicted_seconds);
  comm::set_wait_bound(bound, why, rank_, comm_.node().host);
  if (bound > 0)
    log::debug("a wait in MPI longer than " + std::to_string(static_cast<long long>(bound)) + " s ends this rank (" +
               why + ")");
}

// 2. The backend, the algorithm's check that the plan holds, host memory refused up front.
void Job::start() {
  if (o_.beta != 0 || o_.beta_imag != 0) route_->add_old_c(o_.c, {o_.beta, o_.beta_imag});  // as each block of C leaves
  job_.write = route_->description();
  bool show_progress = o_.progress.value_or(false);
  if (!o_.progress && rank_ == kRoot) show_progress = job_.predicted["seconds"].get<double>() > 5;
  progress_ = std::make_unique<Progress>(rank_ == kRoot && show_progress);
  const partition::GridShape grid = algorithm_->grid(problem_);
  progress_->step("plan: " + algorithm_->name() +
                  (algorithm_->gathers_blocks() ? " on a " + grid.str() + " grid, "
                                                : " over " + std::to_string(comm_.size()) + " rank(s), ") +
                  dtype_name(plan_.dtype));
  me_.rank = rank_;
  me_.host = comm_.node().host;
  job_.network = comm::job_network(comm_);
  job_.network["mpi_start"] = comm::mpi_start_choice().why;
  setup_mark("network described");
  describe_share(share_, me_);
  // B's first rows read while the GPU starts (job/read_ahead.hpp): no HDF5 call of this thread's
  // until stop().
  if (share_.active && ReadAhead::wanted()) {
    reads_ = rank_reads(o_, share_, problem_, tally_, setting_.kernel);
    // (B as stored where a staged GEMM may take it so: StagedReads::b_half)
    const bool half = reads_.half != io::Stored::same;
    read_ahead_.start(half ? reads_.b_half : reads_.b, share_.b_rows.size(),
                      static_cast<std::size_t>(share_.b_cols.size()) * (half ? 2 : dtype_size(plan_.dtype)),
                      ReadAhead::default_bound());
  }
  start_backend();
  read_ahead_.stop();
  setup_mark("backend started");
  if (read_ahead_.rows_ready() > 0)
    log::info(std::to_string(read_ahead_.rows_ready()) + " rows of B read ahead while the backend started");
  const auto progress = [this](const std::string& what) { progress_->step(what); };
  route_->use(be_.get(), progress);
  run_ = std::make_unique<algorithms::RankRun>(comm_, *be_, problem_, o_.asked, setting_, share_, machine_, *route_,
                                               me_, job_, progress);
  run_->work = progress_.get();
  algorithm_->start(*run_);
  setup_mark("algorithm started");
  // Host memory: what the ranks of each node hold against the node's memory.
  const algorithms::RankFootprint mine = algorithm_->rank_footprint(problem_, setting_, machine_, rank_);
  refuse_over_node_memory(comm_, static_cast<double>(mine.host_bytes), algorithm_->holds(problem_),
                          algorithm_->memory_advice());
  setup_mark("host memory checked");
  me_.phases.emplace_back("setup", seconds_since(started_));  // plan, output, backend (GPU start-up)
}

// The rank's backend (GPU selection happens here), checked against the plan's kernel (the kernel
// and --baseline were checked against the settled backend's kernels at the plan: common_setting).
// A rank left idle touches no device: it takes an idle backend of the job's kind, so a second
// process starts no GPU context beside the busy ones.
void Job::start_backend() {
  const auto node = comm_.node();
  comm_.step([&] {
    if (!share_.active) return;
    const backend::Placement where{node.local_rank, node.local_size, static_cast<std::size_t>(o_.asked.gpu_memory)};
    be_ = make_rank_backend(o_.asked.backend, where, setting_.kernel, plan_.dtype, me_,
                            launch_ != nullptr ? launch_->take_backend() : nullptr);
  });
  if (!share_.active) {
    be_ = backend::make_idle_backend(setting_.backend());
    me_.device = be_->device();
    me_.device_id = be_->device_id();
  }
}

// 3. Each rank reads only its share: the blocks of A and B the algorithm asks for. A may stream
// in while the GEMM runs (panels without --baseline; rank 0 decides, so every rank refuses
// non-finite input at the same step).
void Job::read() {
  hold_for_tests("read", rank_);
  const std::size_t es = dtype_size(plan_.dtype);
  int chunks = 1;
  comm_.step([&] {
    if (rank_ != kRoot || !o_.asked.baseline.empty() || !share_.a_may_stream) return;
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
    reads_ = rank_reads(o_, share_, problem_, tally_, setting_.kernel);
    // A and B as stored only where the GPU's staged GEMM takes them so (its kernel is the one
    // rank_reads checked); B's rows read ahead as halves for any other GEMM are read again.
    const bool staged = stage_gemm();
    if (reads_.half != io::Stored::same &&
        !(staged && be_->stages(plan_.dtype, share_.rows.size(), share_.cols.size(), plan_.k))) {
      reads_.half = io::Stored::same;
      reads_.a_half = nullptr;
      reads_.b_half = nullptr;
      if (read_ahead_.rows_ready() > 0) {
        read_ahead_.drop();
        tally_.b = {};  // (only the read ahead had read B: its NaN/Inf are counted again)
      }
    }
    if (reads_.half != io::Stored::same)
      reads_.b_half = read_ahead_.serving(std::move(reads_.b_half));
    else
      reads_.b = read_ahead_.serving(std::move(reads_.b));
    if (staged) {  // nothing read yet: the backend asks for the rows as it goes (compute)
      run_->staged = &reads_;
      me_.staged = true;
      // (A and B read as stored where they are 16-bit floats the GEMM takes so: StagedReads::half)
      me_.read_bytes = static_cast<std::int64_t>((s.a_rows.size() * s.a_cols.size() + s.b_rows.size() * s.b_cols.size()) *
                                                 (reads_.half != io::Stored::same ? 2 : es));
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
      streams_.start_reading(o_.a, s.a_rows.begin, s.a_rows.size(), plan_.k, plan_.dtype, run_->a.data(), chunks,
                             s.count_a);
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
  if (!streaming_ || !share_.a_may_stream || !route_->in_place() || !route_->sink() || o_.asked.verify ||
      !o_.asked.baseline.empty())
    return false;
  if (const auto want = env::word("TESSERA_STAGED")) return *want == "1";  // unset: the backend decides
  return be_->stages(plan_.dtype, share_.rows.size(), share_.cols.size(), plan_.k);
}

void run_job(const RunOptions& o, const comm::Comm& comm, std::string* report_json) {
  // The watchdog's bound holds while the job runs, and no longer (libtessera's caller goes on).
  struct Unbound {
    ~Unbound() { comm::set_wait_bound(0, "", 0, ""); }
  } const unbound;
  report::set_typed_options(typed_options(o));  // the report's options: typed
  comm.step([&] {                               // before anything is read
    check_repeat_options(o);
    if (o.timeout && *o.timeout < 0) throw InputError("--timeout must be 0 (no bound) or more seconds");
  });
  if (many_products(o)) {  // a manifest, or wildcards (job/launch.hpp)
    run_products(o, comm, report_json);
    return;
  }
  JobOptions jo;
  comm.step([&] { jo = job_options(o); });  // a name that is not one: refused on every rank
  RunSeries series(o, MPI_Wtime());
  for (int run = 0; run < series.size(); ++run) {
    if (series.size() > 1 && comm.rank() == kRoot && !o.quiet) {
      std::printf("tessera: %s\n", series.name(run).c_str());
      std::fflush(stdout);
    }
    Job(jo, comm, series, run, report_json).run();
  }
}

}  // namespace tessera::job
