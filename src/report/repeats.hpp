#pragma once
// `tessera run --repeat N --warmup W` in the report: each counted run's wall time and phases, and
// their spread (min, median, max) over the runs, in the JSON report's `repeats` block and as lines
// under the table. The harness fills it (job/repeats.hpp); no MPI here.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::report {

using Phases = std::vector<std::pair<std::string, double>>;  // in the order they ran

// One counted run: the slowest rank's wall time, and every rank's phases (in rank order).
struct RunSample {
  double wall_seconds = 0;
  std::vector<Phases> ranks;
};

struct Spread {
  double min = 0, median = 0, max = 0;  // median: the mean of the two middle values of an even count
};
// The spread of `samples` (all zero when empty).
Spread spread(std::vector<double> samples);

struct Repeats {
  int warmup = 0;               // runs before the counted ones, in no statistic
  std::vector<RunSample> runs;  // the counted runs, in the order they ran
  // The job ran more than once: the report says so (a single run has no `repeats` block).
  bool repeated() const { return warmup > 0 || runs.size() > 1; }
  // The phases any rank reported in any run, in first-seen order.
  std::vector<std::string> phase_names() const;
  // For each run, the slowest rank's time in `phase` (runs where no rank had it are left out):
  // the slowest rank bounds a run.
  std::vector<double> slowest(const std::string& phase) const;
  // For each run, `rank`'s time in `phase` (runs where the rank did not have it are left out).
  std::vector<double> of_rank(std::size_t rank, const std::string& phase) const;
};

// {"runs", "warmup", "wall_seconds": {min, median, max, samples}, "phases": {name: {min, median,
// max}} (the slowest rank's per run), "ranks": [{"rank", "phases": {name: {min, median, max}}}]}.
nlohmann::json to_json(const Repeats& r);
// The lines under the table: "median of N runs after W warm-ups ...", then wall and each phase as
// median (min-max) in ms.
std::string format_repeats(const Repeats& r);

}  // namespace tessera::report
