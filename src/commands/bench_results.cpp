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

// Medians, rates, ratios to the naive and vendor kernels of the same size and dtype, status.
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
    // Against the baseline in the same mode: cublas-tf32 for tf32, cublas-bf16 for bf16, ...
    if (r.baseline.empty()) r.baseline = info.vendor_kernel;
    if (auto it = same.find(r.baseline); it != same.end()) r.pct_vendor = 100.0 * it->second / r.median_s;
  }
}

std::string format_table(const std::vector<Row>& rows, const DeviceInfo& info) {
  const std::string vendor_col = "% " + info.vendor_label;
  std::string out = fmt::format("{:<16} {:<5} {:<16} {:>11} {:>10} {:>8} {:>10} {:>10}  {}\n", "size", "dtype",
                                "kernel", "median ms", "GFLOP/s", "x naive", vendor_col, "rel. err", "status");
  std::string last_group;
  for (const Row& r : rows) {
    const std::string group = r.size.label() + short_name(r.dtype);
    if (!last_group.empty() && group != last_group) out += "\n";
    last_group = group;
    out += fmt::format("{:<16} {:<5} {:<16} {:>11} {:>10} {:>8} {:>10} {:>10}  {}\n", r.size.label(),
                       short_name(r.dtype), r.kernel, num(r.median_s * 1e3, "{:.3f}"), num(r.gflops, "{:.1f}"),
                       num(r.x_naive, "{:.2f}"), num(r.pct_vendor, "{:.1f}"), num(r.rel_error, "{:.2e}"), r.status);
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
         {"status", r.skipped.empty() ? r.status : "skipped"},
         {"note", r.skipped}});
  }
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
          {"results", results}};
}

std::string to_csv(const std::vector<Row>& rows) {
  auto opt = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.6g}", v); };
  std::string out =
      "m,n,k,dtype,kernel,median_ms,gflops,speedup_vs_naive,percent_of_vendor,rel_error,tolerance,status\n";
  for (const Row& r : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{:g},{}\n", r.size.m, r.size.n, r.size.k, short_name(r.dtype),
                       csv_field(r.kernel), opt(r.median_s * 1e3), opt(r.gflops), opt(r.x_naive), opt(r.pct_vendor),
                       opt(r.rel_error), r.tol, csv_field(r.status));
  }
  return out;
}

}  // namespace tessera::commands::bench
