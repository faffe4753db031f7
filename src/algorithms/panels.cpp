// panels: rank (i, j) of a pr x pc grid reads the A rows of block-row i and the B columns of
// block-column j (all of K) and computes its C block in one GEMM: no communication while it
// computes. A's rows may stream in while the GEMM runs, and the rank's C rows go to the output as
// the GEMM hands them back (RowStreams).
#include <algorithm>
#include <exception>

#include "algorithms/algorithm.hpp"
#include "algorithms/gpu_sharing.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {
namespace {

double seconds_since(double start) { return MPI_Wtime() - start; }

// One pwrite of a row piece of C into the output (system call, page cache), when a block does not
// span whole rows.
constexpr double kRowWriteSeconds = 1.5e-6;

class Panels final : public Algorithm {
 public:
  std::string name() const override { return "panels"; }

  Share share(const Problem& p, int rank) const override {
    Share s = block_share(p, rank, p.k);
    if (!s.active) return s;
    s.a_rows = s.rows;
    s.a_cols = {0, p.k};
    s.b_rows = {0, p.k};
    s.b_cols = s.cols;
    s.count_a = s.block_col == 0;  // every element of A and B counted once
    s.count_b = s.block_row == 0;
    s.a_may_stream = true;
    return s;
  }

  RankFootprint rank_footprint(const Problem& p, const Setting& s, const MachineModel& m, int rank) const override {
    const partition::Partition part(p.m, p.n, p.k, p.ranks, p.grid);
    RankFootprint f;
    if (!part.active(rank)) return f;
    const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
    f.rows = part.rows_of(rank).size();
    f.cols = part.cols_of(rank).size();
    const std::int64_t a = part.a_elements(rank) * es, b = part.b_elements(rank) * es;
    const std::int64_t c = part.c_elements(rank) * es;
    f.host_bytes = a + b + c * (s.baseline ? 2 : 1);
    // The backend's GEMM: out of core under --gpu-memory, else in core (pipelined where large).
    f.gpu_bytes = backend::device_bytes(
        s.backend(), {backend::DeviceUse::gemm, s.kernel, p.dtype, f.rows, f.cols, p.k, s.gpu_memory_limit});
    f.read_bytes = a + b;
    f.send_bytes = rank == 0 || s.in_place_write ? 0 : c;
    f.write_bytes = s.in_place_write || rank == 0 ? c : 0;
    const double compute = part.flops(rank) / m.flops(s.gpu, p.dtype);
    const double copies =
        s.gpu ? static_cast<double>(a + b) / m.h2d_bytes_per_s + static_cast<double>(c) / m.d2h_bytes_per_s : 0;
    const double read_a = static_cast<double>(a) / m.read_bytes_per_s,
                 read_b = static_cast<double>(b) / m.read_bytes_per_s;
    // Written in place, a block narrower than C is one pwrite per row (measured on the H200: a
    // 2,000,000-row projection split in two columns took 2.9 s longer than split in rows).
    const double row_writes = s.in_place_write && f.cols < p.n ? static_cast<double>(f.rows) * kRowWriteSeconds : 0;
    const double write = static_cast<double>(f.write_bytes) / m.write_bytes_per_s + row_writes;
    // Its C block to rank 0 (gathered): across nodes through the links' internode rate.
    const bool other_node = p.multi_node() && p.node_of(rank) != p.node_of(0);
    f.comm_seconds = static_cast<double>(f.send_bytes) / (other_node ? m.internode_bytes_per_s : m.network_bytes_per_s);
    f.internode_bytes = other_node ? f.send_bytes : 0;
    // Across nodes the send is rank 0's gather, which the prediction counts there (footprint.cpp);
    // on one node it stays here, as the model was measured.
    f.compute_seconds = copies + compute + (p.multi_node() ? 0 : f.comm_seconds);
    // Streaming (RowStreams): A read and C written in pieces while the GEMM runs; the first piece
    // of A and the last of C are not hidden.
    const int chunks = stream_chunks(static_cast<std::size_t>(a));
    // Staged (backend.hpp's StagedProblem) where A streams on a GPU and C is written in place: B
    // read first, then A tile by tile while the kernels run, C written as its tiles come back;
    // only the staging rings are page-locked.
    f.staged = chunks > 1 && s.gpu && s.in_place_write && !s.baseline && s.gpu_memory_limit == 0;
    if (f.staged) {
      const double tiles = std::max<double>(static_cast<double>(backend::kPipelineTiles),
                                            static_cast<double>(a) / static_cast<double>(backend::kStagedTileBytes));
      f.host_bytes = static_cast<std::int64_t>(backend::kStagingSlots * backend::stage_piece_bytes());
      f.read_seconds = read_b + read_a / tiles;
      f.compute_seconds = std::max(f.compute_seconds, read_a);
      f.write_seconds = std::max(write / tiles, write - f.compute_seconds);
    } else if (chunks > 1 && !s.baseline) {
      f.read_seconds = read_b + std::max(read_a / chunks, read_a - f.compute_seconds);
      f.write_seconds = std::max(write / chunks, write - f.compute_seconds);
    } else {
      f.read_seconds = read_a + read_b;
      f.write_seconds = write;
    }
    return f;
  }

  std::string holds(const Problem& p) const override {
    return "A rows, B columns and C block of a " + p.grid.str() + " grid";
  }

  // The rule of thumb's last resort: one rank, or a 1-D grid on host MPI, where no broadcast
  // saves anything; and what only panels does (whole blocks: --verify, --baseline, out of core).
  int rule_of_thumb(const Asked&, const Problem&, const Environment&) const override { return 1; }

  Setting settle(const Asked& asked, const Problem& p, const Environment& env, const MachineModel&) const override {
    if (asked.comm && *asked.comm != comm::Path::host)
      throw InputError("--comm " + comm::path_name(*asked.comm) +
                       " needs --algorithm summa or ksplit (panels gathers C through host MPI)");
    if (asked.panel_width != 0) throw InputError("--panel-width needs --algorithm summa");
    const Share first = share(p, 0);
    Setting s = common_setting(asked, p, env, first.gemm_m, first.gemm_n, first.gemm_k);
    s.comm = comm::Path::host;  // C gathered to rank 0, where it is not written in place
    s.alone = p.ranks == 1;
    s.gpu_memory_limit = asked.gpu_memory;
    s.baseline = !asked.baseline.empty();
    return s;
  }

  nlohmann::json describe(const Setting& s) const override {
    nlohmann::json j = Algorithm::describe(s);
    if (s.gpu_memory_limit > 0) j["gpu_memory_limit"] = s.gpu_memory_limit;  // out of core within it
    if (s.baseline) j["baseline"] = true;
    return j;
  }

  void start(RankRun& run) override {
    check_backend(run);
    // Ranks on one GPU (same host, name and PCI bus id, whatever CUDA_VISIBLE_DEVICES says) compete.
    const std::string shared =
        shared_gpu_note(run.comm, run.me.device_id >= 0 ? run.me.host + "|" + run.me.device : std::string());
    if (!shared.empty() && run.comm.rank() == 0)
      run.me.warnings.push_back(shared + " (fewer GPUs than ranks on the node)");
  }

  void compute(RankRun& run) override {
    run.progress("computing C blocks with " + run.kernel +
                 (run.streams || run.staged ? std::string(" (A read and C written meanwhile)") : std::string()));
    run.comm.step([&] {
      if (!run.share.active) return;
      if (run.staged) return compute_staged(run);
      const Share& s = run.share;
      backend::GemmProblem prob{run.problem.dtype, s.rows.size(), s.cols.size(), run.problem.k,
                                run.a.data(),      run.b.data(),  run.c.data()};
      if (!run.asked.baseline.empty()) time_baseline(run, prob);
      if (run.streams) {
        prob.a_rows = run.streams->a_rows();
        if (run.out.sink() && !run.asked.verify) {  // rank 0, or every rank when C is written in place
          run.streams->start_writing(run.out.sink(), s.rows.begin, s.cols.begin, s.rows.size(), s.cols.size(),
                                     run.problem.dtype, run.c.data());
          prob.c_rows = run.streams->c_rows();
        }
      }
      // The work done: C's rows as the GEMM hands them back (streaming).
      const auto watching = prob.c_rows && run.work ? run.work->watch(s.rows.size(), "rows of C",
                                                                      [r = prob.c_rows] { return r->wait_for(0); })
                                                    : report::Progress::Watch{};
      const double t = MPI_Wtime();
      std::vector<backend::PhaseTime> phases;
      std::exception_ptr failed;
      try {
        phases = run.be.gemm(run.kernel, prob);
      } catch (...) {
        if (!run.streams) throw;
        failed = std::current_exception();
      }
      const double compute_s = seconds_since(t);  // streaming: includes waiting for A's rows
      if (run.streams) {
        run.streams->finish(failed);  // rethrows the first failure: reading A, the GEMM, writing C
        run.c_written = prob.c_rows != nullptr;
        run.c_write_seconds = run.streams->write_seconds();
      }
      run.me.phases.emplace_back("compute", compute_s);
      for (const auto& p : phases)
        if (p.name != "compute") run.me.phases.emplace_back(p.name, p.seconds);
      for (const auto& w : run.be.warnings())  // e.g. that the block ran out of core
        if (std::find(run.me.warnings.begin(), run.me.warnings.end(), w) == run.me.warnings.end())
          run.me.warnings.push_back(w);
    });
  }

  void deliver(RankRun& run) override {
    const double streamed = run.c_written ? run.c_write_seconds : 0;
    if (write_own_block_in_place(run, streamed)) return;
    const Problem& p = run.problem;
    run.out.gather(run.comm, partition::Partition(p.m, p.n, p.k, p.ranks, p.grid), run.c.data(), {}, run.c_written,
                   run.me.phases);
    if (run.c_written)  // rank 0's own block was written during the GEMM
      for (auto& ph : run.me.phases)
        if (ph.first == "write") ph.second += streamed;
  }

 private:
  // Staged (backend.hpp's StagedProblem): the backend asks for A's and B's rows (the harness's
  // reads) and hands back C's rows, which go straight to this rank's place in the output.
  static void compute_staged(RankRun& run) {
    const Share& s = run.share;
    io::BlockSink* sink = run.out.sink();
    backend::RowProgress c_done;
    double write_s = 0;
    backend::StagedProblem p;
    p.dtype = run.problem.dtype;
    p.m = s.rows.size(), p.n = s.cols.size(), p.k = run.problem.k;
    p.fill_a = run.staged->a;
    p.fill_b = run.staged->b;
    if (run.staged->half != io::Stored::same && run.staged->a_half && run.staged->b_half) {
      p.operands = run.staged->half == io::Stored::f16 ? backend::StagedProblem::Rounded::f16
                                                       : backend::StagedProblem::Rounded::bf16;
      p.fill_a_half = run.staged->a_half;
      p.fill_b_half = run.staged->b_half;
    }
    p.take_c = [&](std::int64_t row0, std::int64_t rows, const void* from) {
      const double t = MPI_Wtime();
      sink->write_block(s.rows.begin + row0, s.cols.begin, rows, s.cols.size(), from);
      write_s += seconds_since(t);
      c_done.publish(row0 + rows);
    };
    // A float32 C stored as a 16-bit float: rounded by the backend where it can (on the GPU, as
    // the host would round it), so half the bytes come back and the writer only writes them.
    if (const io::Stored half = sink->takes_rounded(); half != io::Stored::same && p.dtype == DType::f32) {
      p.c_rounded = half == io::Stored::f16 ? backend::StagedProblem::Rounded::f16
                                            : backend::StagedProblem::Rounded::bf16;
      p.take_c_rounded = [&](std::int64_t row0, std::int64_t rows, const void* from) {
        const double t = MPI_Wtime();
        sink->write_rounded_block(s.rows.begin + row0, s.cols.begin, rows, s.cols.size(), from);
        write_s += seconds_since(t);
        c_done.publish(row0 + rows);
      };
    }
    const auto watching = run.work ? run.work->watch(s.rows.size(), "rows of C", [&] { return c_done.wait_for(0); })
                                   : report::Progress::Watch{};
    const double t = MPI_Wtime();
    const auto phases = run.be.gemm_staged(run.kernel, p);
    run.me.phases.emplace_back("compute", seconds_since(t));  // includes reading B and A, and waiting for the disk
    for (const auto& ph : phases)
      if (ph.name != "compute") run.me.phases.emplace_back(ph.name, ph.seconds);
    run.c_written = true;
    run.c_write_seconds = write_s;
  }

  // --baseline: the compared kernel on the same block (after a warm-up: module load, handles),
  // then the same warm-up for the measured kernel, so the comparison is fair.
  static void time_baseline(RankRun& run, const backend::GemmProblem& prob) {
    backend::HostBuffer scratch = run.be.allocate_host(run.c.size());
    auto bprob = prob;
    bprob.c = scratch.data();
    run.be.gemm(run.asked.baseline, bprob);
    // Compared like for like: kernel time on a GPU, the whole call on the CPU.
    double kernel_s = -1, total_s = 0;
    for (const auto& p : run.be.gemm(run.asked.baseline, bprob)) {
      total_s += p.seconds;
      if (p.name == "kernel") kernel_s = p.seconds;
    }
    run.me.baseline_kernel = run.asked.baseline;
    run.me.baseline_seconds = kernel_s >= 0 ? kernel_s : total_s;
    run.be.gemm(run.kernel, prob);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_panels() { return std::make_unique<Panels>(); }

}  // namespace tessera::algorithms
