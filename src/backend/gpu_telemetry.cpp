// The GPU's clocks and power from NVML (gpu_telemetry.hpp).
#include "backend/gpu_telemetry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tessera::backend {

namespace {

// The values of one field of the samples that NVML gave (not NaN), sorted.
std::vector<double> sorted_values(const std::vector<TelemetrySample>& samples, double TelemetrySample::*field) {
  std::vector<double> x;
  for (const TelemetrySample& s : samples)
    if (!std::isnan(s.*field)) x.push_back(s.*field);
  std::sort(x.begin(), x.end());
  return x;
}

double median_of_sorted(const std::vector<double>& x) {
  const std::size_t h = x.size() / 2;
  return x.size() % 2 ? x[h] : (x[h - 1] + x[h]) / 2;
}

}  // namespace

TelemetryStats summarize(const std::vector<TelemetrySample>& samples) {
  TelemetryStats t;
  t.samples = static_cast<int>(samples.size());
  if (const auto mhz = sorted_values(samples, &TelemetrySample::sm_mhz); !mhz.empty()) {
    t.sm_mhz_median = median_of_sorted(mhz);
    t.sm_mhz_min = mhz.front();
    t.sm_mhz_max = mhz.back();
  }
  if (const auto watts = sorted_values(samples, &TelemetrySample::power_w); !watts.empty()) {
    t.power_w_median = median_of_sorted(watts);
    t.power_w_max = watts.back();
  }
  return t;
}

// The few NVML entry points used, declared here (nvml.h is not in every toolkit): return codes
// are ints (0 = NVML_SUCCESS), devices opaque pointers.
struct GpuTelemetry::Nvml {
  using Ret = int;
  using Device = void*;
  static constexpr int kClockSm = 1;              // NVML_CLOCK_SM
  static constexpr unsigned kPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT (mW)
  // nvmlFieldValue_t (nvml.h): the layout every NVML since 2017 uses.
  struct FieldValue {
    unsigned field_id = 0, scope_id = 0;
    long long timestamp = 0, latency_us = 0;
    int value_type = 0, status = 0;  // nvmlValueType_t, nvmlReturn_t
    union {
      double d;
      unsigned ui;
      unsigned long ul;
      unsigned long long ull;
      long long sll;
      int si;
      unsigned short us;
    } value{};
  };
  static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

  void* lib = nullptr;
  bool initialized = false;
  Device device = nullptr;
  Ret (*init)() = nullptr;
  Ret (*shutdown)() = nullptr;
  Ret (*by_pci)(const char*, Device*) = nullptr;
  Ret (*clock)(Device, int, unsigned*) = nullptr;
  Ret (*max_clock)(Device, int, unsigned*) = nullptr;
  Ret (*power)(Device, unsigned*) = nullptr;
  Ret (*power_limit)(Device, unsigned*) = nullptr;
  Ret (*fields)(Device, int, FieldValue*) = nullptr;  // absent from old drivers: optional

  ~Nvml() {
    if (initialized) shutdown();
    if (lib) ::dlclose(lib);
  }

  // Opens NVML and finds the GPU; "" on success, else why not.
  std::string open(const std::string& pci_bus_id) {
    lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return "NVML (libnvidia-ml.so.1) not found";
    bind("nvmlInit_v2", init);
    bind("nvmlShutdown", shutdown);
    bind("nvmlDeviceGetHandleByPciBusId_v2", by_pci);
    bind("nvmlDeviceGetClockInfo", clock);
    bind("nvmlDeviceGetMaxClockInfo", max_clock);
    bind("nvmlDeviceGetPowerUsage", power);
    bind("nvmlDeviceGetEnforcedPowerLimit", power_limit);
    bind("nvmlDeviceGetFieldValues", fields);
    if (!init || !shutdown || !by_pci || !clock || !max_clock || !power || !power_limit)
      return "NVML lacks an entry point tessera uses";
    if (init() != 0) return "nvmlInit failed (no driver?)";
    initialized = true;
    if (pci_bus_id.empty()) return "the GPU's PCI bus id is unknown";
    std::string id = pci_bus_id;  // as the CUDA runtime writes it: hex digits in upper case
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    if (by_pci(id.c_str(), &device) != 0) return "NVML does not know the GPU at PCI bus id " + pci_bus_id;
    return "";
  }

  template <class Fn>
  void bind(const char* symbol, Fn& fn) {
    fn = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  }

  double sm_mhz() const {
    unsigned mhz = 0;
    return clock(device, kClockSm, &mhz) == 0 ? static_cast<double>(mhz) : TelemetryStats::kNone;
  }

  // Instantaneous power in mW where the driver has the field, else NaN.
  double instant_power_w() const {
    FieldValue v;
    v.field_id = kPowerInstant;
    if (!fields || fields(device, 1, &v) != 0 || v.status != 0) return TelemetryStats::kNone;
    switch (v.value_type) {  // nvmlValueType_t
      case 0:
        return v.value.d / 1e3;
      case 1:
        return v.value.ui / 1e3;
      case 2:
        return static_cast<double>(v.value.ul) / 1e3;
      case 3:
        return static_cast<double>(v.value.ull) / 1e3;
      case 4:
        return static_cast<double>(v.value.sll) / 1e3;
      case 5:
        return v.value.si / 1e3;
      case 6:
        return v.value.us / 1e3;
      default:
        return TelemetryStats::kNone;
    }
  }

  // NVML's power usage in W: its own running average on Ampere and newer.
  double average_power_w() const {
    unsigned mw = 0;
    return power(device, &mw) == 0 ? mw / 1e3 : TelemetryStats::kNone;
  }
};

GpuTelemetry::GpuTelemetry(const std::string& pci_bus_id, std::chrono::milliseconds period)
    : nvml_(std::make_unique<Nvml>()), period_(period) {
  why_ = nvml_->open(pci_bus_id);
  if (!why_.empty()) {
    nvml_.reset();
    return;
  }
  unsigned value = 0;
  if (nvml_->max_clock(nvml_->device, Nvml::kClockSm, &value) == 0) sm_max_mhz_ = value;
  if (nvml_->power_limit(nvml_->device, &value) == 0) power_limit_w_ = value / 1e3;
  if (!std::isnan(nvml_->instant_power_w()))
    power_source_ = "NVML instantaneous power";
  else if (!std::isnan(nvml_->average_power_w()))
    power_source_ = "NVML power usage (the driver's 1-s average on Ampere and newer)";
  else
    power_source_ = "none (NVML reports no power for this GPU)";
}

GpuTelemetry::~GpuTelemetry() { (void)stop(); }

bool GpuTelemetry::available() const { return nvml_ != nullptr; }

TelemetrySample GpuTelemetry::sample() const {
  TelemetrySample s;
  s.sm_mhz = nvml_->sm_mhz();
  s.power_w = nvml_->instant_power_w();
  if (std::isnan(s.power_w)) s.power_w = nvml_->average_power_w();
  return s;
}

void GpuTelemetry::sample_until_stopped() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const TelemetrySample s = sample();  // NVML calls take ~0.1-1 ms: not under the lock
    lock.lock();
    samples_.push_back(s);
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

void GpuTelemetry::start() {
  if (!available() || sampler_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samples_.clear();
    stopping_ = false;
  }
  sampler_ = std::thread([this] { sample_until_stopped(); });
}

TelemetryStats GpuTelemetry::stop() {
  if (!sampler_.joinable()) return {};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  sampler_.join();
  samples_.push_back(sample());  // the state at the end, however short the interval
  return summarize(samples_);
}

}  // namespace tessera::backend
