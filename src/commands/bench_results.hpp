#pragma once
// `tessera bench`'s results: one row per kernel, size and dtype, and what the device run knows
// about itself; turned into the ratios, a table, JSON and CSV (bench_results.cpp). Internal to
// commands/ (bench.cpp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/gpu_telemetry.hpp"
#include "commands/bench.hpp"
#include "commands/bench_harness.hpp"
#include "core/dtype.hpp"
#include "report/repeats.hpp"

namespace tessera::commands::bench {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The accuracy check: relative Frobenius error against a float64 reference. For
// uniform [-1, 1) data the expected error of a length-k float sum is about 0.4 u sqrt(k)
// (u = 2^-24): 2e-6 at k = 8192, so 1e-5 leaves a margin of 4; float64 is far below 1e-12.
inline double tolerance(DType t) { return t == DType::f32 ? 1e-5 : 1e-12; }

// Kernels that round their inputs first (tensor cores: TF32, BF16 with unit roundoff u_in) err
// by the input rounding: each product a*b becomes ab(1 + d1)(1 + d2), |d| <= u_in, a relative
// error with standard deviation about sqrt(2/3) u_in for uniform rounding errors; summed over k
// independent terms it stays ~0.8 u_in relative to C in the Frobenius norm (both grow as
// sqrt(k)). 2 u_in leaves a margin of 2.4 (TF32: 9.8e-4, BF16: 7.8e-3), on top of the float32
// tolerance for the accumulation.
inline double tolerance(DType t, double input_unit_roundoff) { return tolerance(t) + 2 * input_unit_roundoff; }

inline double median(std::vector<double> x) { return x.empty() ? kNaN : report::spread(std::move(x)).median; }

// One table row: a kernel on one size and dtype.
struct Row {
  Size size;
  DType dtype;
  std::string kernel;
  // What the kernel is, for choosing its baseline (finish()):
  bool vendor = false;             // a vendor library's call (cuBLAS, OpenBLAS): a baseline
  double input_unit_roundoff = 0;  // of the format it rounds A and B to first; 0: none (the dtype's)
  bool bf16_inputs = false;        // it was given A and B stored as BF16, not in the dtype
  std::vector<double> seconds;     // one per timed launch; empty when skipped
  double rel_error = kNaN;
  std::string skipped;                // why it was not run; empty when it ran
  double tol = 0;                     // accuracy tolerance; 0 = tolerance(dtype)
  backend::TelemetryStats telemetry;  // the GPU's clock and power during the timed launches
  // Filled in by finish():
  std::string baseline;  // the vendor row "% vendor" compares with ("" when none qualifies)
  double median_s = kNaN, gflops = kNaN, x_naive = kNaN, pct_vendor = kNaN;
  std::string status;

  Row(const Size& s, DType t, std::string name) : size(s), dtype(t), kernel(std::move(name)) {}
};

// How the GPU's clock and power were recorded, for the header and the JSON.
struct TelemetryInfo {
  bool recorded = false;
  std::string source;  // where the power figures come from, or why nothing was recorded
  double period_ms = 0, sm_clock_max_mhz = kNaN, power_limit_w = kNaN;
};

// What a device run needs to know about itself, for the header, the JSON and the ratios.
struct DeviceInfo {
  std::string backend, device, reference, naive_kernel, vendor_kernel, vendor_label;
  std::vector<std::string> kernels;  // in bench order
  std::vector<std::string> default_sizes;
  TelemetryInfo telemetry;  // GPU runs; not recorded on the CPU
};

// The medians, rates and ratios. "x naive": against the naive kernel of the same size and dtype.
// "% vendor": against the row's baseline, the fastest vendor row of the same size and dtype that
// passed its accuracy check, was given the same inputs (A and B stored alike) and rounds them no
// more than the row's kernel does: the fastest honest vendor call for the same inputs and
// accuracy (an FP32 kernel: cublas; a BF16 kernel on float32 data: cublas-bf16, which rounds
// them first, or a more accurate call where that is faster).
void finish(std::vector<Row>& rows, const DeviceInfo& info);
std::string format_table(const std::vector<Row>& rows, const DeviceInfo& info);
nlohmann::json to_json(const std::vector<Row>& rows, const DeviceInfo& info, const BenchOptions& opts);
std::string to_csv(const std::vector<Row>& rows);

}  // namespace tessera::commands::bench
