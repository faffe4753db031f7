// The clock and power sampler (backend/gpu_telemetry.hpp): its summary of the samples, and that
// it degrades to "not available, and why" where NVML or the GPU is missing. Host only; the GPU
// test binary samples a real GPU.
#include <catch2/catch_test_macros.hpp>

#include <cmath>

#include "backend/gpu_telemetry.hpp"

using tessera::backend::GpuTelemetry;
using tessera::backend::summarize;
using tessera::backend::TelemetrySample;

TEST_CASE("telemetry: medians, min and max over the samples that have a value", "[telemetry]") {
  const double none = std::nan("");
  const auto t = summarize({{1980, 700}, {1755, none}, {1890, 650}, {none, 690}});
  CHECK(t.samples == 4);
  CHECK(t.sm_mhz_median == 1890);
  CHECK(t.sm_mhz_min == 1755);
  CHECK(t.sm_mhz_max == 1980);
  CHECK(t.power_w_median == 690);
  CHECK(t.power_w_max == 700);
  const auto empty = summarize({});
  CHECK(empty.samples == 0);
  CHECK(std::isnan(empty.sm_mhz_median));
  CHECK(std::isnan(empty.power_w_max));
}

TEST_CASE("telemetry: a GPU NVML cannot find is not sampled, and says why", "[telemetry]") {
  GpuTelemetry none("ffff:ff:1f.7");  // no such PCI device here (or anywhere NVML would answer)
  CHECK_FALSE(none.available());
  CHECK_FALSE(none.why_unavailable().empty());
  none.start();
  const auto t = none.stop();
  CHECK(t.samples == 0);
  CHECK(std::isnan(t.sm_mhz_median));
  GpuTelemetry unknown("");
  CHECK_FALSE(unknown.available());
}
