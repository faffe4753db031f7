#include "report/repeats.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::report {

namespace {

double phase_of(const Phases& phases, const std::string& name, bool& found) {
  for (const auto& [n, s] : phases)
    if (n == name) {
      found = true;
      return s;
    }
  found = false;
  return 0;
}

nlohmann::json to_json(const Spread& s) { return {{"min", s.min}, {"median", s.median}, {"max", s.max}}; }

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

}  // namespace

Spread spread(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return {samples.front(), median, samples.back()};
}

std::vector<std::string> Repeats::phase_names() const {
  std::vector<std::string> names;
  for (const auto& run : runs)
    for (const auto& phases : run.ranks)
      for (const auto& p : phases)
        if (std::find(names.begin(), names.end(), p.first) == names.end()) names.push_back(p.first);
  return names;
}

std::vector<double> Repeats::slowest(const std::string& phase) const {
  std::vector<double> out;
  for (const auto& run : runs) {
    bool any = false;
    double worst = 0;
    for (const auto& phases : run.ranks) {
      bool found = false;
      const double s = phase_of(phases, phase, found);
      if (found) worst = any ? std::max(worst, s) : s;
      any = any || found;
    }
    if (any) out.push_back(worst);
  }
  return out;
}

std::vector<double> Repeats::of_rank(std::size_t rank, const std::string& phase) const {
  std::vector<double> out;
  for (const auto& run : runs) {
    if (rank >= run.ranks.size()) continue;
    bool found = false;
    const double s = phase_of(run.ranks[rank], phase, found);
    if (found) out.push_back(s);
  }
  return out;
}

nlohmann::json to_json(const Repeats& r) {
  std::vector<double> walls;
  for (const auto& run : r.runs) walls.push_back(run.wall_seconds);
  nlohmann::json wall = to_json(spread(walls));
  wall["samples"] = walls;
  const std::vector<std::string> names = r.phase_names();
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& name : names) phases[name] = to_json(spread(r.slowest(name)));
  std::size_t nranks = 0;
  for (const auto& run : r.runs) nranks = std::max(nranks, run.ranks.size());
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t rank = 0; rank < nranks; ++rank) {
    nlohmann::json mine = nlohmann::json::object();
    for (const auto& name : names)
      if (const auto samples = r.of_rank(rank, name); !samples.empty()) mine[name] = to_json(spread(samples));
    ranks.push_back({{"rank", rank}, {"phases", mine}});
  }
  return {{"runs", r.runs.size()}, {"warmup", r.warmup}, {"wall_seconds", wall}, {"phases", phases}, {"ranks", ranks}};
}

std::string format_repeats(const Repeats& r) {
  std::vector<double> walls;
  for (const auto& run : r.runs) walls.push_back(run.wall_seconds);
  std::string out = fmt::format(
      "median of {} run{} after {} warm-up{} (the rows above are the last run); the slowest rank's time per run, ms, "
      "median (min-max):\n",
      r.runs.size(), r.runs.size() == 1 ? "" : "s", r.warmup, r.warmup == 1 ? "" : "s");
  const auto line = [](const std::string& name, const Spread& s) {
    return fmt::format("  {:<10} {:>10} ({}-{})\n", name, ms(s.median), ms(s.min), ms(s.max));
  };
  out += line("wall", spread(walls));
  for (const auto& name : r.phase_names()) out += line(name, spread(r.slowest(name)));
  return out;
}

}  // namespace tessera::report
