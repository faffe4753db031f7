#pragma once
// `tessera tune`: times every full-precision GPU kernel (tessera's own, each registered tile
// variant such as "warptile-128x128" and "warptile-64x64" separately, and cuBLAS) on the present
// GPU and writes the winner per dtype and size to a JSON tune file: the fastest correct kernel,
// or cuBLAS where none beats it by more than backend::kOwnKernelMargin. `--kernel auto` on the
// CUDA backend reads it (the file and its lookup: backend/tuning.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::commands {

// ---- `tessera tune` ------------------------------------------------------------------------------

struct TuneOptions {
  std::vector<std::string> sizes;   // "N" or "MxNxK"; empty: 1024, 2048, 4096, 8192
  std::vector<std::string> dtypes;  // "f32", "f64"; empty: both
  std::string out;                  // empty: default_tune_output(gpu)
  int warmup = 1;
  int repeats = 5;  // timed launches per candidate; the median decides
  std::uint64_t seed = 42;
  std::string config;  // --config file, if any: never written
};

// Times the candidates, prints a table, writes the tune file (merged with choices already in
// it for other sizes and dtypes). Returns 0; throws InputError/DeviceError on failure.
int run_tune(const TuneOptions& opts);

}  // namespace tessera::commands
