#include "algorithms/choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "algorithms/algorithm.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {
namespace {

// The rule of thumb (choice.hpp): the algorithm that says it is favoured most.
std::string rule(const Asked& r, const Problem& p, const Environment& env) {
  std::string best;
  int best_score = -1;
  for (const std::string& name : algorithm_names())
    if (const int score = make_algorithm(name)->rule_of_thumb(r, p, env); score > best_score) {
      best = name;
      best_score = score;
    }
  return best;
}

// The grids a job may run on: the given one, or the model's grid for all ranks and for half, a
// quarter, ... of them (ranks beyond a grid stay idle).
std::vector<partition::GridShape> grids(const Asked& r, const Problem& p) {
  if (r.grid) return {p.grid};
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

Choice evaluate(const Algorithm& alg, const Asked& r, const Problem& p, const Environment& env, const MachineModel& m) {
  Choice c;
  c.algorithm = alg.name();
  c.setting = alg.settle(r, p, env, m);
  c.problem = p;
  c.footprint = footprint(alg, p, c.setting, m);
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

Choice choose(const Asked& r, const Problem& p, const Environment& env, const MachineModel& m) {
  const std::string ruled = r.algorithm != "auto" ? r.algorithm : rule(r, p, env);
  Choice best = evaluate(*make_algorithm(ruled), r, p, env, m);  // an unknown name, a refused option: thrown
  best.why = r.algorithm != "auto" ? "as asked" : "the rule of thumb";
  if (r.algorithm != "auto" || r.needs_whole_blocks() || p.ranks < 2) return best;
  const double ruled_s = best.footprint.predicted_seconds();
  std::vector<Choice> fewer;  // GPU jobs: every candidate, for the preference for fewer GPUs
  for (const std::string& name : algorithm_names()) {
    const auto alg = make_algorithm(name);
    for (const auto& grid : grids(r, p)) {
      Problem q = p;
      q.grid = grid;
      if (!alg->auto_candidate(p, q)) continue;
      Choice c;
      try {
        c = evaluate(*alg, r, q, env, m);
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
  }
  return fewer_gpus_unless_clearly_slower(std::move(best), fewer);
}

}  // namespace tessera::algorithms
