// A test's own algorithm (issue 28 item 2: an algorithm is one file and one registry line): rank 0
// computes all of C in one GEMM, every other rank stays idle. Registered below with one line; the
// dry run, `auto`, the run, the report and the refusals take it with no edit anywhere in tessera.
//
// Its model is honest about memory and traffic but claims its reads cost nothing, so that `auto`
// takes it where reading bounds the other algorithms (test_settings.cpp, on a machine of slow
// reads), and only there.
#include <memory>

#include "algorithms/algorithm.hpp"
#include "core/error.hpp"

namespace {

namespace alg = tessera::algorithms;
using tessera::InputError;

class OneRank final : public alg::Algorithm {
 public:
  std::string name() const override { return "one-rank"; }
  tessera::partition::GridShape grid(const alg::Problem&) const override { return {1, 1}; }

  alg::Share share(const alg::Problem& p, int rank) const override {
    alg::Problem one = p;
    one.grid = grid(p);
    alg::Share s = alg::block_share(one, rank, p.k);
    if (!s.active) return s;
    s.a_rows = {0, p.m};
    s.a_cols = {0, p.k};
    s.b_rows = {0, p.k};
    s.b_cols = {0, p.n};
    s.count_a = s.count_b = true;
    return s;
  }

  alg::RankFootprint rank_footprint(const alg::Problem& p, const alg::Setting& s, const alg::MachineModel& m,
                                    int rank) const override {
    alg::RankFootprint f;
    if (rank != 0) return f;
    const auto es = static_cast<std::int64_t>(tessera::dtype_size(p.dtype));
    const std::int64_t a = p.m * p.k * es, b = p.k * p.n * es, c = p.c_bytes();
    f.rows = p.m;
    f.cols = p.n;
    f.host_bytes = a + b + c;
    f.gpu_bytes = s.gpu ? a + b + c : 0;
    f.read_bytes = a + b;
    f.write_bytes = c;
    f.compute_seconds =
        2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / m.flops(s.gpu, p.dtype);
    f.write_seconds = static_cast<double>(c) / m.write_bytes_per_s;
    return f;
  }

  std::string holds(const alg::Problem&) const override { return "A, B and all of C on rank 0"; }

  alg::Setting settle(const alg::Asked& asked, const alg::Problem& p, const alg::Environment& env,
                      const alg::MachineModel&) const override {
    if (asked.comm || asked.panel_width != 0 || asked.verify || !asked.baseline.empty() || asked.gpu_memory > 0)
      throw InputError("one-rank takes none of --comm, --panel-width, --verify, --baseline, --gpu-memory");
    alg::Setting s = alg::common_setting(asked, p, env, p.m, p.n, p.k);
    s.alone = true;  // nothing travels between ranks while it computes
    return s;
  }

  void start(alg::RankRun& run) override { alg::check_backend(run); }

  void compute(alg::RankRun& run) override {
    run.progress("computing all of C on rank 0 with " + run.kernel);
    run.comm.step([&] {
      if (!run.share.active) return;
      const alg::Problem& p = run.problem;
      const auto phases = run.be.gemm(run.kernel, {p.dtype, p.m, p.n, p.k, run.a.data(), run.b.data(), run.c.data()});
      for (const auto& ph : phases) run.me.phases.emplace_back(ph.name, ph.seconds);
    });
  }

  void deliver(alg::RankRun& run) override {
    const alg::Problem& p = run.problem;
    const bool mine = run.share.active;
    if (run.out.in_place()) {
      run.out.write_own_block(run.comm, 0, 0, mine ? p.m : 0, mine ? p.n : 0, run.c.data(), false, 0, run.me.phases);
      return;
    }
    run.out.gather(run.comm, tessera::partition::Partition(p.m, p.n, p.k, p.ranks, grid(p)), run.c.data(), {}, false,
                   run.me.phases);
  }
};

const alg::AlgorithmRegistration kRegistered("one-rank", [] { return std::unique_ptr<alg::Algorithm>(new OneRank); });

}  // namespace
