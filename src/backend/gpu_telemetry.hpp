#pragma once
// The GPU's SM clock and board power while something runs, read from NVML, so that timings taken
// on different machines (or on one machine at different clocks) can be compared: an H200 at its
// 700 W limit runs DGEMM at 1980 MHz, one held lower runs it slower. `tessera bench` samples
// during each kernel's timed launches.
//
// NVML is the driver's library (libnvidia-ml.so.1), opened with dlopen as comm/peers.cpp opens it
// for NVLink: tessera does not link it, and where it is missing (no driver, a machine without a
// GPU) the sampler says why and records nothing; nothing else changes.
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::backend {

// What the samples of one interval say; NaN where nothing was sampled.
struct TelemetryStats {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  int samples = 0;
  double sm_mhz_median = kNone, sm_mhz_min = kNone, sm_mhz_max = kNone;
  double power_w_median = kNone, power_w_max = kNone;
};

// One sample: SM clock in MHz, board power in W (NaN when NVML gave none).
struct TelemetrySample {
  double sm_mhz = TelemetryStats::kNone;
  double power_w = TelemetryStats::kNone;
};

// Medians, minimum and maximum of the samples that have a value (pure: unit-tested).
TelemetryStats summarize(const std::vector<TelemetrySample>& samples);

class GpuTelemetry {
 public:
  // NVML's view of the GPU with this PCI bus id (as the CUDA runtime or Backend::device_identity
  // gives it, e.g. "0000:1b:00.0"); not available() when NVML or the GPU cannot be found.
  explicit GpuTelemetry(const std::string& pci_bus_id,
                        std::chrono::milliseconds period = std::chrono::milliseconds(10));
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;

  bool available() const;
  // Why not available(): "" when it is.
  const std::string& why_unavailable() const { return why_; }
  // Where the power figures come from: NVML's instantaneous reading where the driver has it,
  // else its running average (over 1 s on Ampere and newer), for the report's header.
  const std::string& power_source() const { return power_source_; }
  std::chrono::milliseconds period() const { return period_; }
  // The GPU's highest SM clock and its enforced power limit; NaN when unknown.
  double sm_clock_max_mhz() const { return sm_max_mhz_; }
  double power_limit_w() const { return power_limit_w_; }

  // Samples every period() on a thread of its own, from now (one sample at once) until stop()
  // (one more then), which summarizes them. Without NVML: no thread, stop() returns no samples.
  void start();
  TelemetryStats stop();

 private:
  struct Nvml;
  TelemetrySample sample() const;
  void sample_until_stopped();

  std::unique_ptr<Nvml> nvml_;
  std::string why_, power_source_;
  std::chrono::milliseconds period_;
  double sm_max_mhz_ = TelemetryStats::kNone, power_limit_w_ = TelemetryStats::kNone;
  std::thread sampler_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<TelemetrySample> samples_;  // under mutex_ while the sampler runs
};

}  // namespace tessera::backend
