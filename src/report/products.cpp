#include "report/products.hpp"

#include <fmt/format.h>

namespace tessera::report {

int LaunchReport::failed() const {
  int n = 0;
  for (const auto& p : products) n += p.report ? 0 : 1;
  return n;
}

int LaunchReport::committed() const {
  int n = 0;
  for (const auto& p : products) n += p.committed ? 1 : 0;
  return n;
}

double LaunchReport::flops() const {
  double f = 0;
  for (const auto& p : products)
    if (p.report) f += p.report->total_flops();
  return f;
}

nlohmann::json to_json(const LaunchReport& r) {
  nlohmann::json products = nlohmann::json::array();
  for (std::size_t i = 0; i < r.products.size(); ++i) {
    const ProductOutcome& p = r.products[i];
    nlohmann::json row = {{"index", i + 1},
                          {"a", p.a},
                          {"b", p.b},
                          {"c", p.c},
                          {"status", !p.report ? "failed" : p.committed ? "committed" : "not committed"}};
    if (!p.error.empty()) row["error"] = p.error;
    if (p.report) row["report"] = to_json(*p.report);
    products.push_back(std::move(row));
  }
  return {{"schema", kReportSchema},
          {"kind", "products"},
          {"tessera_version", r.version},
          {"started_at", r.started_at},
          {"nranks", r.nranks},
          {"keep_going", r.keep_going},
          {"products", products},
          {"notes", r.notes},
          {"totals",
           {{"listed", r.listed},
            {"ran", static_cast<int>(r.products.size())},
            {"failed", r.failed()},
            {"committed", r.committed()},
            {"wall_seconds", r.wall_seconds},
            {"flops", r.flops()},
            {"gflops", r.wall_seconds > 0 ? r.flops() / r.wall_seconds / 1e9 : 0.0}}}};
}

namespace {

std::string phase_ms(const JobReport& j, const std::string& name) {
  double slowest = -1;
  for (const auto& rr : j.ranks)
    if (rr.active && rr.has_phase(name)) slowest = std::max(slowest, rr.phase(name));
  return slowest < 0 ? "-" : fmt::format("{:.1f}", slowest * 1e3);
}

std::string shortened(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : "~" + text.substr(text.size() - (width - 1));
}

}  // namespace

std::string format_products_table(const LaunchReport& r) {
  std::string out = fmt::format("tessera {}: {} product{} on {} rank{}\n", r.version, r.listed,
                                r.listed == 1 ? "" : "s", r.nranks, r.nranks == 1 ? "" : "s");
  out += fmt::format("{:>4}  {:<28} {:>17} {:<4} {:>9} {:>9} {:>9} {:>9} {:>10}  {}\n", "#", "C", "m x n x k", "type",
                     "read/ms", "comp/ms", "write/ms", "wall/ms", "GFLOP/s", "bounded by");
  for (std::size_t i = 0; i < r.products.size(); ++i) {
    const ProductOutcome& p = r.products[i];
    if (!p.report) {
      out += fmt::format("{:>4}  {:<28} failed: {}\n", i + 1, shortened(p.c, 28), p.error);
      continue;
    }
    const JobReport& j = *p.report;
    out += fmt::format("{:>4}  {:<28} {:>17} {:<4} {:>9} {:>9} {:>9} {:>9.1f} {:>10.1f}  {}\n", i + 1,
                       shortened(p.c, 28), fmt::format("{}x{}x{}", j.m, j.n, j.k), j.dtype, phase_ms(j, "read"),
                       phase_ms(j, "compute"), phase_ms(j, "write"), j.wall_seconds * 1e3, j.aggregate_gflops(),
                       j.bound_phase());
  }
  const int ran = static_cast<int>(r.products.size());
  out += fmt::format("total: {} of {} product{} committed", r.committed(), r.listed, r.listed == 1 ? "" : "s");
  if (r.failed() > 0) out += fmt::format(", {} failed", r.failed());
  if (ran < r.listed) out += fmt::format(", {} not started", r.listed - ran);
  out += fmt::format("; wall {:.3f} s, {:.1f} GFLOP/s over the launch (2MNK summed / wall)\n", r.wall_seconds,
                     r.wall_seconds > 0 ? r.flops() / r.wall_seconds / 1e9 : 0.0);
  for (const auto& note : r.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace tessera::report
