#include "algorithms/choice.hpp"

#include <fmt/format.h>

#include <memory>

#include "algorithms/algorithm.hpp"
#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {
namespace {

void refuse_options(const Request& r) {
  const std::string& want = r.algorithm;
  if (want != "auto") make_algorithm(want);  // an unknown name throws
  if (want != "auto" && want != "panels") {
    if (r.verify) throw InputError("--verify needs --algorithm panels (run `tessera verify` after " + want + ")");
    if (r.baseline) throw InputError("--baseline needs --algorithm panels");
    if (r.gpu_memory > 0)
      throw InputError("--gpu-memory (out of core) needs --algorithm panels: " + want + " keeps " +
                       (want == "ksplit" ? "all of C" : "its C block") + " on every GPU");
  }
  if (r.comm != "auto" && r.comm != "host" && r.comm != "cuda-aware" && r.comm != "nccl")
    throw InputError("invalid --comm '" + r.comm + "' (choose: auto, host, cuda-aware, nccl)");
  if (r.panel_width < 0) throw InputError("--panel-width must be >= 1 (or 0: chosen)");
}

void refuse_combination(const Request& r, const std::string& chosen) {
  if (chosen == "panels" && r.comm != "auto" && r.comm != "host")
    throw InputError("--comm " + r.comm + " needs --algorithm summa or ksplit (panels gathers C through host MPI)");
  if (chosen == "ksplit" && r.comm == "cuda-aware")
    throw InputError("--comm cuda-aware needs --algorithm summa (ksplit sums with NCCL or host MPI)");
  if (chosen != "summa" && r.panel_width != 0) throw InputError("--panel-width needs --algorithm summa");
}

// The rule of thumb (choice.hpp).
std::string rule(const Request& r, const Problem& p, const Environment& env) {
  const bool plain = !r.verify && !r.baseline && r.gpu_memory == 0;
  if (!plain || p.ranks < 2) return "panels";
  const bool nvlink = env.gpu && env.nccl && r.comm != "host" && r.comm != "cuda-aware";
  // P partial products of all of C, summed: worth it while they are no bigger than the inputs.
  const double partials = static_cast<double>(p.ranks) * static_cast<double>(p.m) * static_cast<double>(p.n);
  const double inputs = static_cast<double>(p.k) * (static_cast<double>(p.m) + static_cast<double>(p.n));
  if (nvlink && partials <= inputs) return "ksplit";
  if (p.grid.size() >= 2 && (nvlink || (p.grid.rows > 1 && p.grid.cols > 1))) return "summa";
  if (r.comm == "nccl" || r.comm == "cuda-aware") return "summa";  // asked for a device path
  return "panels";
}

// The grids a job may run on: the given one, or the model's grid for all ranks and for half, a
// quarter, ... of them (ranks beyond a grid stay idle).
std::vector<partition::GridShape> grids(const Request& r, const Problem& p) {
  if (r.grid_given) return {p.grid};
  std::vector<partition::GridShape> out{p.grid};
  const auto add = [&out](partition::GridShape g) {
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  };
  for (int ranks = p.ranks; ranks >= 1; ranks /= 2) {
    if (ranks < p.ranks) add(partition::choose_grid(p.m, p.n, p.k, ranks));
    // Row blocks too: each rank then writes whole rows of C (in place, the fastest to write).
    if (ranks > 1 && p.m >= ranks) add({ranks, 1});
  }
  return out;
}

Choice evaluate(const std::string& name, const Request& r, Problem p, const Environment& env, const MachineModel& m) {
  Choice c;
  c.algorithm = name;
  c.setting = setting_for(name, r, p, env);
  const auto alg = make_algorithm(name);
  c.problem = p;
  c.footprint = footprint(*alg, p, c.setting, m);
  return c;
}

// More busy GPUs must earn their place: each costs start-up, NCCL groups and teardown that the
// model only estimates (measured on 2 H200s: it missed 0.5-0.8 s of a 2-GPU run that it predicted
// 8% faster than one GPU, and the run was 15% slower). So the fastest run on fewer GPUs is taken
// unless `best` is clearly faster than it.
Choice fewer_gpus_unless_clearly_slower(Choice best, const std::vector<Choice>& fewer) {
  const Choice* alt = nullptr;
  for (const Choice& c : fewer)
    if (c.footprint.busy < best.footprint.busy &&
        (alt == nullptr || c.footprint.predicted_seconds() < alt->footprint.predicted_seconds()))
      alt = &c;
  if (alt == nullptr) return best;
  const double t = alt->footprint.predicted_seconds(), t_best = best.footprint.predicted_seconds();
  if (t_best < (1 - kClearlyFaster) * t) return best;
  Choice c = *alt;
  c.why = fmt::format("predicted {:.2f} s on {} GPU(s) against {:.2f} s for {} on {}: more GPUs must be clearly faster",
                      t, c.footprint.busy, t_best, best.algorithm, best.footprint.busy);
  return c;
}

}  // namespace

Setting setting_for(const std::string& algorithm, const Request& r, const Problem& p, const Environment& env) {
  Setting s;
  s.gpu = env.gpu;
  s.panel_width = r.panel_width;
  s.gpu_memory_limit = r.gpu_memory;
  s.baseline = r.baseline;
  s.bands = r.bands;
  s.in_place_write = r.write != "gather";
  s.accumulating_kernel = env.gpu && backend::gpu_kernel_accumulates(r.kernel, p.dtype);
  const bool nccl = env.gpu && env.nccl;
  if (algorithm == "summa") s.comm = comm::path_name(comm::choose_path(r.comm, env.gpu, nccl, env.cuda_aware));
  if (algorithm == "ksplit") s.comm = nccl && r.comm != "host" ? "nccl" : "host";
  if (p.ranks == 1) s.comm = "none";
  return s;
}

Choice choose(const Request& r, const Problem& p, const Environment& env, const MachineModel& m) {
  refuse_options(r);
  const std::string ruled = r.algorithm != "auto" ? r.algorithm : rule(r, p, env);
  refuse_combination(r, ruled);
  Choice best = evaluate(ruled, r, p, env, m);
  best.why = r.algorithm != "auto" ? "--algorithm " + r.algorithm : "the rule of thumb";
  const bool plain = !r.verify && !r.baseline && r.gpu_memory == 0;
  if (r.algorithm != "auto" || !plain || p.ranks < 2) return best;
  const double ruled_s = best.footprint.predicted_seconds();
  std::vector<Choice> fewer;  // GPU jobs: every candidate, for the preference for fewer GPUs
  for (const std::string& name : algorithm_names())
    for (const auto& grid : grids(r, p)) {
      if (name == "ksplit" && !(grid == p.grid)) continue;  // ksplit runs on every rank
      if (name != "panels" && grid.size() == 1) continue;   // one busy rank: nothing to exchange
      Problem q = p;
      q.grid = grid;
      Choice c;
      try {
        refuse_combination(r, name);
        c = evaluate(name, r, q, env, m);
      } catch (const InputError&) {
        continue;  // an algorithm this request cannot run
      }
      const double t = c.footprint.predicted_seconds();
      if (env.gpu) fewer.push_back(c);
      if (t < (1 - kClearlyFaster) * ruled_s && t < best.footprint.predicted_seconds()) {
        c.why = fmt::format("predicted {:.2f} s against {:.2f} s for {} on all ranks", t, ruled_s, ruled);
        best = std::move(c);
      }
    }
  return fewer_gpus_unless_clearly_slower(std::move(best), fewer);
}

}  // namespace tessera::algorithms
