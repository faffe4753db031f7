#pragma once
// `tessera bench`: the lesson's "measure the speedup". One process, one device: for each size
// and dtype, each kernel of the backend is warmed up, timed (median of many launches on random
// data), checked against a float64 reference, and tabled as GFLOP/s, speedup over the naive
// kernel and percent of the vendor baseline (cuBLAS on the GPU, OpenBLAS on the CPU).
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::commands {

struct BenchOptions {
  std::string backend = "auto";      // cpu | cuda | auto
  std::vector<std::string> sizes;    // "N" (cube) or "MxNxK"; empty: the backend's defaults
  std::vector<std::string> dtypes;   // "f32", "f64"; empty: both
  std::vector<std::string> kernels;  // empty: every kernel of the backend
  int warmup = 2;
  int repeats = 10;  // timed launches per kernel; the median is reported
  std::uint64_t seed = 42;
  std::string json_path;  // write results as JSON when set
  std::string csv_path;   // write results as CSV when set
  std::string config;     // --config file, if any: never written
};

// The kernels --kernels may name: every backend's (backend::kernel_catalog) and the CPU's direct
// CBLAS call, the baseline `bench` times beside them.
std::vector<std::string> bench_kernel_names();

// Prints the table to stdout; returns 0, or 1 if any kernel failed its accuracy check.
int run_bench(const BenchOptions& opts);

}  // namespace tessera::commands
