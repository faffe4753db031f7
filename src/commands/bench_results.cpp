// `tessera bench`'s results: the ratios, the table, JSON and CSV.
#include "commands/bench_results.hpp"

#include "report/provenance.hpp"

#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/version.hpp"

namespace tessera::commands::bench {

namespace {

std::string num(double v, const char* spec) { return std::isnan(v) ? "-" : fmt::format(fmt::runtime(spec), v); }

nlohmann::json maybe(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

namespace {

// The baseline of row r among `rows` (see finish() in bench_results.hpp); nullptr when none.
const Row* baseline_of(const Row& r, const std::vector<Row>& rows) {
  const Row* best = nullptr;
  for (const Row& v : rows) {
    const bool honest = v.vendor && v.status == "ok" && v.dtype == r.dtype && v.size.label() == r.size.label() &&
                        v.bf16_inputs == r.bf16_inputs && v.input_unit_roundoff <= r.input_unit_roundoff;
    if (honest && (!best || v.median_s < best->median_s)) best = &v;
  }
  return best;
}

std::string telemetry_cell(double v) { return num(v, "{:.0f}"); }

}  // namespace

// Medians, rates, status; then the ratios to the naive kernel and to the baseline.
void finish(std::vector<Row>& rows, const DeviceInfo& info) {
  std::map<std::pair<std::string, DType>, std::map<std::string, double>> medians;
  for (Row& r : rows) {
    if (!r.skipped.empty()) {
      r.status = "skipped: " + r.skipped;
      continue;
    }
    r.median_s = median(r.seconds);
    r.gflops = r.size.flops() / r.median_s * 1e-9;
    if (r.tol == 0) r.tol = tolerance(r.dtype);
    r.status = r.rel_error <= r.tol ? "ok" : "FAIL";  // NaN fails
    medians[{r.size.label(), r.dtype}][r.kernel] = r.median_s;
  }
  for (Row& r : rows) {
    if (!r.skipped.empty()) continue;
    const auto& same = medians[{r.size.label(), r.dtype}];
    if (auto it = same.find(info.naive_kernel); it != same.end()) r.x_naive = it->second / r.median_s;
    if (const Row* base = baseline_of(r, rows)) {
      r.baseline = base->kernel;
      r.pct_vendor = 100.0 * base->median_s / r.median_s;
    }
  }
}

std::string format_table(const std::vector<Row>& rows, const DeviceInfo& info) {
  const std::string vendor_col = "% " + info.vendor_label;
  const bool clocks = info.telemetry.recorded;
  const auto line = [&](const std::string& size, const std::string& dtype, const std::string& kernel,
                        const std::string& ms, const std::string& gflops, const std::string& x_naive,
                        const std::string& pct, const std::string& vs, const std::string& err, const std::string& mhz,
                        const std::string& watts, const std::string& status) {
    std::string text = fmt::format("{:<16} {:<5} {:<18} {:>11} {:>10} {:>8} {:>10} {:<18} {:>10}", size, dtype, kernel,
                                   ms, gflops, x_naive, pct, vs, err);
    if (clocks) text += fmt::format(" {:>6} {:>5}", mhz, watts);
    return text + "  " + status + "\n";
  };
  std::string out = line("size", "dtype", "kernel", "median ms", "GFLOP/s", "x naive", vendor_col, "vs", "rel. err",
                         "SM MHz", "W", "status");
  std::string last_group;
  for (const Row& r : rows) {
    const std::string group = r.size.label() + short_name(r.dtype);
    if (!last_group.empty() && group != last_group) out += "\n";
    last_group = group;
    out += line(r.size.label(), short_name(r.dtype), r.kernel, num(r.median_s * 1e3, "{:.3f}"), num(r.gflops, "{:.1f}"),
                num(r.x_naive, "{:.2f}"), num(r.pct_vendor, "{:.1f}"), r.baseline.empty() ? "-" : r.baseline,
                num(r.rel_error, "{:.2e}"), telemetry_cell(r.telemetry.sm_mhz_median),
                telemetry_cell(r.telemetry.power_w_median), r.status);
  }
  return out;
}

nlohmann::json to_json(const std::vector<Row>& rows, const DeviceInfo& info, const BenchOptions& opts) {
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows) {
    std::vector<double> ms;
    for (double s : r.seconds) ms.push_back(s * 1e3);
    results.push_back(
        {{"m", r.size.m},
         {"n", r.size.n},
         {"k", r.size.k},
         {"size", r.size.label()},
         {"dtype", short_name(r.dtype)},
         {"kernel", r.kernel},
         {"times_ms", ms},
         {"median_ms", maybe(r.median_s * 1e3)},
         {"min_ms", ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(*std::min_element(ms.begin(), ms.end()))},
         {"max_ms", ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(*std::max_element(ms.begin(), ms.end()))},
         {"gflops", maybe(r.gflops)},
         {"speedup_vs_naive", maybe(r.x_naive)},
         {"percent_of_vendor", maybe(r.pct_vendor)},
         {"rel_error", maybe(r.rel_error)},
         {"tolerance", r.tol},
         {"baseline", r.baseline},
         {"input_unit_roundoff", r.input_unit_roundoff},
         {"bf16_inputs", r.bf16_inputs},
         {"telemetry_samples", r.telemetry.samples},
         {"sm_clock_mhz", r.telemetry.samples == 0 ? nlohmann::json(nullptr)
                                                   : nlohmann::json{{"median", maybe(r.telemetry.sm_mhz_median)},
                                                                    {"min", maybe(r.telemetry.sm_mhz_min)},
                                                                    {"max", maybe(r.telemetry.sm_mhz_max)}}},
         {"power_w", r.telemetry.samples == 0 ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"median", maybe(r.telemetry.power_w_median)},
                                                               {"max", maybe(r.telemetry.power_w_max)}}},
         {"status", r.skipped.empty() ? r.status : "skipped"},
         {"note", r.skipped}});
  }
  const TelemetryInfo& t = info.telemetry;
  return {{"schema", report::kBenchSchema},
          {"provenance", report::provenance()},
          {"tessera_version", kVersion},
          {"backend", info.backend},
          {"device", info.device},
          {"naive_kernel", info.naive_kernel},
          {"vendor_kernel", info.vendor_kernel},
          {"reference", info.reference},
          {"error_metric", "relative Frobenius error ||C - Cref||_F / ||Cref||_F"},
          {"tolerance", {{"f32", tolerance(DType::f32)}, {"f64", tolerance(DType::f64)}}},
          {"warmup", opts.warmup},
          {"repeats", opts.repeats},
          {"seed", opts.seed},
          {"timing", info.backend == "cuda" ? "CUDA events around each launch, device buffers, no copies"
                                            : "steady_clock around each call"},
          {"baseline_rule",
           "percent_of_vendor: against `baseline`, the fastest vendor call of the same size and dtype that passed "
           "its accuracy check, was given the same inputs (A and B stored alike) and rounds them no more"},
          {"telemetry",
           {{"recorded", t.recorded},
            {"source", t.source},
            {"period_ms", t.period_ms},
            {"sm_clock_max_mhz", maybe(t.sm_clock_max_mhz)},
            {"power_limit_w", maybe(t.power_limit_w)}}},
          {"results", results}};
}

std::string to_csv(const std::vector<Row>& rows) {
  auto opt = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.6g}", v); };
  std::string out =
      "m,n,k,dtype,kernel,median_ms,gflops,speedup_vs_naive,percent_of_vendor,rel_error,tolerance,status,baseline,"
      "sm_clock_mhz,power_w\n";
  for (const Row& r : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{:g},{},{},{},{}\n", r.size.m, r.size.n, r.size.k,
                       short_name(r.dtype), csv_field(r.kernel), opt(r.median_s * 1e3), opt(r.gflops), opt(r.x_naive),
                       opt(r.pct_vendor), opt(r.rel_error), r.tol, csv_field(r.status), csv_field(r.baseline),
                       opt(r.telemetry.sm_mhz_median), opt(r.telemetry.power_w_median));
  }
  return out;
}

}  // namespace tessera::commands::bench
