// The algorithm choice and the comm path it implies, in-process (algorithms/choice.hpp): the rule
// of thumb, the refusals of options an algorithm cannot honour, and the footprint model
// overriding the rule (another algorithm, or fewer ranks) where it predicts a clearly shorter run.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/choice.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"

using tessera::DType;
using tessera::InputError;
namespace alg = tessera::algorithms;

namespace {

alg::Problem problem(std::int64_t m, std::int64_t n, std::int64_t k, int ranks, DType dtype = DType::f64) {
  return {m, n, k, dtype, ranks, tessera::partition::choose_grid(m, n, k, ranks)};
}

alg::Environment environment(bool gpu, bool nccl, bool cuda_aware, bool in_place = true) {
  alg::Environment env;
  env.gpu = gpu;
  env.nccl = nccl;
  env.cuda_aware = cuda_aware;
  env.in_place_write = in_place;
  return env;
}
const alg::Environment kCpu = environment(false, false, false);
const alg::Environment kNvlink = environment(true, true, false);
// C gathered to rank 0 (--write gather): the route is part of what the ranks agree on.
const alg::Environment kCpuGathered = environment(false, false, false, false);
const alg::Environment kNvlinkGathered = environment(true, true, false, false);

// NCCL groups that cost nothing to set up: on problems this small the default model would
// rightly prefer a path without them (see "the model overrides the rule" below).
alg::MachineModel free_nccl() {
  alg::MachineModel m;
  m.nccl_group_seconds = 1e-9;
  m.multi_gpu_seconds = 0;  // and more GPU ranks that cost nothing either
  return m;
}

// GPUs of 1 TFLOP/s with free NCCL groups: compute bounds every run, so two GPUs are clearly
// faster than one on products of a few TFLOP.
alg::MachineModel slow_gpus() {
  alg::MachineModel m = free_nccl();
  m.gpu_flops_f32 = m.gpu_flops_f64 = 1e12;
  return m;
}

std::string chosen(const alg::Asked& r, const alg::Problem& p, const alg::Environment& env) {
  return alg::choose(r, p, env, free_nccl()).algorithm;
}

}  // namespace

TEST_CASE("auto: the rule of thumb where the model sees no clear winner", "[algorithms][choice]") {
  const alg::Asked r;
  CHECK(chosen(r, problem(20, 20, 40, 1), kCpu) == "panels");  // one rank
  CHECK(chosen(r, problem(20, 20, 40, 2), kCpu) == "panels");  // 1-D grid on host MPI
  CHECK(chosen(r, problem(40, 40, 40, 4), kCpu) == "summa");   // a 2-D grid
  // GPUs: big enough that two are clearly faster than one (below, one GPU is kept). C gathered
  // (--write gather), so that no rank stages its GEMM: the rule's choice between summa and ksplit.
  alg::Asked gathered;
  gathered.write = alg::WriteRoute::gather;
  gathered.grid = tessera::partition::GridShape{};  // given: the problem's grid (the rule's) is used
  const auto gpus = [&gathered](const alg::Problem& p) {
    return alg::choose(gathered, p, kNvlinkGathered, slow_gpus()).algorithm;
  };
  CHECK(gpus(problem(8192, 8192, 8192, 2, DType::f32)) == "ksplit");  // P M N <= (M + N) K over NVLink
  CHECK(gpus(problem(8192, 8192, 1024, 2, DType::f32)) == "summa");   // partials bigger than the inputs
  // C written in place: panels on row blocks, each GPU's GEMM staged, no sum and no NCCL group,
  // beats ksplit's where compute bounds.
  const alg::Choice staged = alg::choose(r, problem(8192, 8192, 8192, 2, DType::f32), kNvlink, slow_gpus());
  CHECK(staged.algorithm == "panels");
  CHECK(staged.footprint.busy == 2);
  CHECK(staged.footprint.root.staged);
  // On a 1x2 grid the blocks share C's rows: their writes add no rate, and each row is a write.
  alg::Asked columns;
  columns.algorithm = "panels";
  columns.grid = tessera::partition::GridShape{1, 2};
  auto side_by_side = problem(2000000, 256, 256, 2, DType::f32);
  side_by_side.grid = {1, 2};
  auto stacked = side_by_side;
  stacked.grid = {2, 1};
  alg::MachineModel m;
  CHECK(alg::choose(columns, side_by_side, kNvlink, m).footprint.predicted.write >
        2 * alg::choose(columns, stacked, kNvlink, m).footprint.predicted.write);
}

TEST_CASE("auto: more busy GPUs only where clearly faster than fewer", "[algorithms][choice]") {
  const alg::Asked r;
  // Tiny: the rule's ksplit and summa on 2 GPUs are predicted no faster than one GPU.
  for (const auto& p : {problem(64, 64, 64, 2), problem(4096, 4096, 64, 2)}) {
    const auto c = alg::choose(r, p, kNvlink, free_nccl());
    CHECK(c.algorithm == "panels");
    CHECK(c.footprint.busy == 1);
    CHECK(c.why.find("more GPUs must be clearly faster") != std::string::npos);
  }
  // A second GPU predicted faster, but by less than kClearlyFaster: one GPU.
  alg::MachineModel m = slow_gpus();
  const auto p = problem(16384, 16384, 16384, 2, DType::f32);
  alg::Asked one;
  one.algorithm = "panels";
  one.grid = tessera::partition::GridShape{1, 1};
  auto alone = p;
  alone.grid = {1, 1};
  const double t1 = alg::choose(one, alone, kNvlink, m).footprint.predicted_seconds();
  const alg::Choice best = alg::choose(r, p, kNvlink, m);  // the fastest on 2 GPUs
  REQUIRE(best.footprint.busy == 2);
  const double t2 = best.footprint.predicted_seconds();
  REQUIRE(t2 < (1 - 2.5 * alg::kClearlyFaster) * t1);
  m.multi_gpu_seconds = (t1 - t2) - 0.5 * alg::kClearlyFaster * t1;  // 2 GPUs 5% faster
  CHECK(alg::choose(r, p, kNvlink, m).footprint.busy == 1);
  m.multi_gpu_seconds = (t1 - t2) - 2 * alg::kClearlyFaster * t1;  // 2 GPUs 20% faster
  CHECK(alg::choose(r, p, kNvlink, m).footprint.busy == 2);
  // On CPUs the ranks share nothing the model misses: the rule and the model as before.
  CHECK(alg::choose(r, problem(40, 40, 40, 4), kCpu, free_nccl()).footprint.busy == 4);
}

TEST_CASE("auto keeps panels for what only panels does", "[algorithms][choice]") {
  alg::Asked r;
  r.verify = true;
  CHECK(chosen(r, problem(64, 64, 64, 4), kNvlink) == "panels");
  r = {};
  r.gpu_memory = 1 << 20;
  CHECK(chosen(r, problem(64, 64, 64, 4), kNvlink) == "panels");
}

TEST_CASE("options an algorithm cannot honour are refused", "[algorithms][choice]") {
  alg::Asked r;
  r.algorithm = "summa";
  r.verify = true;
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kCpu, {}), InputError);
  r = {};
  r.algorithm = "ksplit";
  r.panel_width = 16;
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kCpu, {}), InputError);
  r = {};
  r.algorithm = "panels";
  r.comm = tessera::comm::Path::nccl;
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kNvlink, {}), InputError);
  r = {};
  r.algorithm = "ksplit";
  r.comm = tessera::comm::Path::cuda_aware;
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kNvlink, {}), InputError);
  r = {};
  r.algorithm = "cannon";
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kCpu, {}), InputError);
  r = {};
  r.algorithm = "summa";
  r.comm = tessera::comm::Path::nccl;  // on CPUs
  CHECK_THROWS_AS(alg::choose(r, problem(8, 8, 8, 2), kCpu, {}), InputError);
  alg::Environment mixed = kNvlink;  // some ranks on a GPU, some not
  mixed.gpu = false;
  mixed.mixed = true;
  CHECK_THROWS_AS(alg::choose({}, problem(8, 8, 8, 2), mixed, {}), InputError);
}

TEST_CASE("the setting names the comm path each algorithm would take", "[algorithms][choice]") {
  const alg::Asked r;
  const auto p = problem(64, 64, 64, 2);
  const auto settled = [](const std::string& name, const alg::Asked& asked, const alg::Problem& q,
                          const alg::Environment& env) { return alg::make_algorithm(name)->settle(asked, q, env, {}); };
  using tessera::comm::Path;
  CHECK(settled("summa", r, p, kNvlink).comm == Path::nccl);
  CHECK(settled("summa", r, p, kCpu).comm == Path::host);
  CHECK(settled("summa", r, p, environment(true, false, true)).comm == Path::cuda_aware);
  CHECK(settled("ksplit", r, p, kNvlink).comm == Path::nccl);
  alg::Asked host;
  host.comm = Path::host;
  CHECK(settled("ksplit", host, p, kNvlink).comm == Path::host);
  CHECK(settled("summa", r, problem(64, 64, 64, 1), kNvlink).comm_name() == "none");
  CHECK(settled("panels", r, p, kCpu).comm_name() == "host");
  CHECK_FALSE(settled("panels", r, p, kCpuGathered).in_place_write);
  // Two ranks on one GPU: NCCL cannot join them, unless the second is left idle.
  alg::Environment shared = kNvlink;
  shared.shared_gpu_from = 1;
  CHECK(settled("ksplit", r, p, shared).comm == Path::host);
  CHECK(settled("summa", r, p, shared).comm == Path::host);
  auto one_busy = p;
  one_busy.grid = {1, 1};
  CHECK(settled("summa", r, one_busy, shared).comm == Path::nccl);
}

TEST_CASE("the model overrides the rule where it predicts a clearly shorter run", "[algorithms][choice]") {
  // Small problems on 2 GPUs: the NCCL groups' set-up costs more than summa or ksplit save.
  CHECK(alg::choose({}, problem(64, 64, 64, 2), kNvlink, alg::MachineModel{}).algorithm == "panels");
  // NCCL groups that take 10 s to set up: summa and ksplit over NVLink lose to panels on host MPI.
  alg::MachineModel slow_nccl;
  slow_nccl.nccl_group_seconds = 10;
  const alg::Asked r;
  const auto p = problem(2048, 2048, 2048, 2, DType::f32);
  const auto c = alg::choose(r, p, kNvlink, slow_nccl);
  CHECK(c.algorithm == "panels");
  CHECK(c.why.find("predicted") != std::string::npos);
}

TEST_CASE("the model leaves ranks idle where extra ranks cannot help", "[algorithms][choice]") {
  // C gathered to rank 0 over a network of 1 MB/s: one rank alone writes its C, nothing travels.
  alg::MachineModel slow_network;
  slow_network.network_bytes_per_s = 1e6;
  alg::Asked r;
  const auto c = alg::choose(r, problem(1000, 1000, 10, 4), kCpuGathered, slow_network);
  CHECK(c.problem.grid.size() == 1);
  CHECK(c.footprint.busy == 1);
  CHECK(c.footprint.ranks == 4);
  // With --grid the grid is the user's.
  r.grid = tessera::partition::GridShape{2, 2};
  CHECK(alg::choose(r, problem(1000, 1000, 10, 4), kCpuGathered, slow_network).problem.grid.size() == 4);
}

TEST_CASE("a small product on GPUs runs on one where a second costs more than it saves", "[algorithms][choice]") {
  // Free NCCL groups, but more than one busy GPU costs 10 s: the job keeps one GPU busy.
  alg::MachineModel m = slow_gpus();
  m.multi_gpu_seconds = 10;
  const auto c = alg::choose({}, problem(2048, 2048, 2048, 2, DType::f32), kNvlink, m);
  CHECK(c.footprint.busy == 1);
  CHECK(c.footprint.predicted.startup == m.startup_seconds);
  // Free: both GPUs, and the second rank's cost is in the start-up the model predicts.
  m.multi_gpu_seconds = 0.25;
  const auto both = alg::choose({}, problem(8192, 8192, 8192, 2, DType::f32), kNvlink, m);
  CHECK(both.footprint.busy == 2);
  CHECK(both.footprint.predicted.startup == Catch::Approx(m.startup_seconds + 0.25));
  // On CPU ranks there is no such cost.
  CHECK(alg::choose({}, problem(2048, 2048, 2048, 2), kCpu, m).footprint.predicted.startup == m.startup_seconds);
}

TEST_CASE("C is made durable at what its writers reach together", "[algorithms][footprint]") {
  alg::MachineModel m = free_nccl();
  m.durable_write_bytes_per_s = 2e9;
  m.durable_write_bytes_per_s_one_rank = 1e6;  // one writer: a slow stream, two: twice as fast
  const auto p = problem(4096, 4096, 64, 2, DType::f32);
  const auto one = alg::choose({}, p, kCpuGathered, m), two = alg::choose({}, p, kCpu, m);
  REQUIRE(one.footprint.busy == 2);
  REQUIRE(two.footprint.busy == 2);
  const double c_bytes = 4096.0 * 4096 * 4;
  CHECK(one.footprint.predicted.write >= c_bytes / 1e6 - one.footprint.predicted.compute - 1e-9);
  CHECK(two.footprint.predicted.write == Catch::Approx(c_bytes / 2e6 - two.footprint.predicted.compute).epsilon(1e-6));
}

TEST_CASE("a given --algorithm is kept, whatever the model predicts", "[algorithms][choice]") {
  alg::MachineModel slow_nccl;
  slow_nccl.nccl_group_seconds = 10;
  alg::Asked r;
  r.algorithm = "ksplit";
  CHECK(alg::choose(r, problem(2048, 2048, 2048, 2), kNvlink, slow_nccl).algorithm == "ksplit");
}
