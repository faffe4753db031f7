// `tessera bench`: every kernel of one device, timed on random data and checked against a
// float64 reference. On the GPU the kernels are timed directly on device buffers with CUDA
// events around each launch (copies are not the kernels' cost); on the CPU with steady_clock.
// Results are data first (rows -> JSON/CSV), then a table.
#include "commands/bench.hpp"
#include "commands/bench_harness.hpp"
#include "commands/bench_results.hpp"
#include "commands/provenance.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "commands/command_paths.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "io/atomic_file.hpp"
#include "kernels/cpu_gemm.hpp"
#include "report/provenance.hpp"

#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda_backend.hpp"
#include "commands/bench_harness_cuda.hpp"
#include "backend/gpu_telemetry.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"
#endif

namespace tessera::commands {
namespace {

using namespace bench;

// cpu-naive above this size takes seconds a launch: too slow to time ten times per dtype.
constexpr std::int64_t kCpuNaiveMax = 1024;

// OpenBLAS called directly (cblas_direct below): the CPU's vendor baseline.
constexpr const char* kCpuVendorKernel = "openblas-direct";

void progress_done(const Row& row) {
  if (!row.skipped.empty())
    std::fprintf(stderr, " skipped (%s)\n", row.skipped.c_str());
  else
    std::fprintf(stderr, " %.3f ms, rel. error %.2e\n", median(row.seconds) * 1e3, row.rel_error);
}

// ---- CPU ---------------------------------------------------------------------------------------

DeviceInfo cpu_info() {
  // The registry's kernels in bench order (the naive one first: the registry lists the default
  // first), then the direct CBLAS call.
  std::vector<std::string> names = kernels::cpu_kernel_names();
  std::reverse(names.begin(), names.end());
  names.emplace_back(kCpuVendorKernel);
  DeviceInfo info{"cpu",
                  fmt::format("cpu (openblas {} threads)", kernels::openblas_threads()),
                  "OpenBLAS dgemm on the inputs in float64",
                  "cpu-naive",
                  kCpuVendorKernel,
                  "OpenBLAS",
                  names,
                  {"256", "512", "1024", "257x255x253"},
                  {}};
  info.telemetry.source = "not recorded on the CPU";
  return info;
}

// cblas_?gemm called here, not through tessera: what "openblas" (through kernels/) is compared with.
void cblas_direct(const Size& s, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0f, a, static_cast<int>(s.k), b, static_cast<int>(s.n), 0.0f, c,
              static_cast<int>(s.n));
}
void cblas_direct(const Size& s, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0, a, static_cast<int>(s.k), b, static_cast<int>(s.n), 0.0, c,
              static_cast<int>(s.n));
}

template <class T>
void bench_cpu(const Size& s, const Inputs& in, const std::vector<std::string>& names, const Timing& timing,
               std::vector<Row>& rows) {
  const DType dtype = sizeof(T) == 4 ? DType::f32 : DType::f64;
  const std::vector<T> a = rounded<T>(in.a), b = rounded<T>(in.b);
  const bool fits_int = s.m <= INT32_MAX && s.n <= INT32_MAX && s.k <= INT32_MAX;

  std::vector<double> ref(static_cast<std::size_t>(s.m * s.n));
  if (fits_int) {
    const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    cblas_direct(s, a64.data(), b64.data(), ref.data());
  }

  std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
  for (const std::string& kernel : names) {
    Row row(s, dtype, kernel);
    row.vendor = kernel == kCpuVendorKernel;
    std::function<void()> launch = [&] { cblas_direct(s, a.data(), b.data(), c.data()); };
    if (const kernels::CpuKernel* found = kernels::find_cpu_kernel(kernel))
      launch = [&, found] { found->run<T>(s.m, s.n, s.k, a.data(), b.data(), c.data()); };
    if (kernel == "cpu-naive" && std::max({s.m, s.n, s.k}) > kCpuNaiveMax)
      row.skipped = fmt::format("cpu-naive above {}", kCpuNaiveMax);
    if (!fits_int) row.skipped = "no float64 reference: sizes beyond the BLAS int range";

    announce("bench", s, dtype, kernel);
    if (row.skipped.empty()) {
      std::fill(c.begin(), c.end(), std::numeric_limits<T>::quiet_NaN());  // unwritten -> NaN error
      row.seconds = time_on_host(timing, launch);
      row.rel_error = rel_frobenius_error(c, ref);
    }
    progress_done(row);
    rows.push_back(std::move(row));
  }
}

// ---- GPU ---------------------------------------------------------------------------------------

#ifdef TESSERA_HAVE_CUDA

DeviceInfo gpu_info(const std::string& device, const backend::GpuTelemetry& telemetry) {
  DeviceInfo info{"cuda",
                  device,
                  "cuBLAS GemmEx in FP64 (CUBLAS_COMPUTE_64F) on the inputs in float64",
                  "naive",
                  "cublas",
                  "cuBLAS",
                  kernels::gpu_kernel_names(),
                  {"1024", "2048", "4096", "8192", "4099x4097x4095"},
                  {}};
  TelemetryInfo& t = info.telemetry;
  t.recorded = telemetry.available();
  t.source = t.recorded ? telemetry.power_source() : telemetry.why_unavailable();
  t.period_ms = static_cast<double>(telemetry.period().count());
  t.sm_clock_max_mhz = telemetry.sm_clock_max_mhz();
  t.power_limit_w = telemetry.power_limit_w();
  return info;
}

// C = A * B in float64 with cuBLAS: fast, and independent of the hand-written kernels.
std::vector<double> gpu_reference(const Size& s, const std::vector<double>& a, const std::vector<double>& b,
                                  kernels::GpuContext& ctx, const kernels::Stream& stream) {
  const kernels::DeviceBuffer da = upload(a, "A (float64 reference)", stream);
  const kernels::DeviceBuffer db = upload(b, "B (float64 reference)", stream);
  const kernels::DeviceBuffer dc(static_cast<std::size_t>(s.m * s.n) * sizeof(double), "C (float64 reference)");
  kernels::gpu_gemm("cublas", {DType::f64, s.m, s.n, s.k, da.get(), db.get(), dc.get(), stream.get()}, ctx);
  return download<double>(dc, static_cast<std::size_t>(s.m * s.n), stream);
}

// A and B stored as BF16 (rounded to nearest from the float32 inputs), for the kernels that take
// them so (cublas-bf16-stored): made on the device the first time one is benched at a size.
struct Bf16Inputs {
  kernels::DeviceBuffer a, b;
  void make(const kernels::DeviceBuffer& da, const kernels::DeviceBuffer& db, const Size& s,
            const kernels::Stream& stream) {
    if (a.get()) return;
    a = kernels::DeviceBuffer(static_cast<std::size_t>(s.m * s.k) * 2, "A (BF16)");
    b = kernels::DeviceBuffer(static_cast<std::size_t>(s.k * s.n) * 2, "B (BF16)");
    kernels::gpu_round_to_bf16(static_cast<const float*>(da.get()), a.get(), s.m * s.k, stream.get());
    kernels::gpu_round_to_bf16(static_cast<const float*>(db.get()), b.get(), s.k * s.n, stream.get());
  }
};

template <class T>
void bench_gpu(const Size& s, const Inputs& in, const std::vector<std::string>& names, const Timing& timing,
               kernels::GpuContext& ctx, const kernels::Stream& stream, backend::GpuTelemetry& telemetry,
               std::vector<Row>& rows) {
  const DType dtype = sizeof(T) == 4 ? DType::f32 : DType::f64;
  const std::vector<T> a = rounded<T>(in.a), b = rounded<T>(in.b);
  std::string why;
  if (!kernels::gpu_can_implement("cublas", {DType::f64, s.m, s.n, s.k}, &why))
    throw InputError("bench: no float64 reference for " + s.label() + ": " + why);
  const std::vector<double> ref = gpu_reference(s, rounded<double>(a), rounded<double>(b), ctx, stream);

  const std::size_t c_count = static_cast<std::size_t>(s.m * s.n);
  const kernels::DeviceBuffer da = upload(a, "A", stream);
  const kernels::DeviceBuffer db = upload(b, "B", stream);
  const kernels::DeviceBuffer dc(c_count * sizeof(T), "C");
  Bf16Inputs bf16;

  for (const std::string& kernel : names) {
    Row row(s, dtype, kernel);
    kernels::GpuGemm g{dtype, s.m, s.n, s.k, da.get(), db.get(), dc.get(), stream.get()};
    kernels::GpuKernelTraits traits;
    if (kernels::gpu_kernel_traits(kernel, &traits)) {
      row.vendor = traits.vendor;
      row.input_unit_roundoff = traits.input_unit_roundoff;
      row.bf16_inputs = traits.inputs == kernels::InputStorage::bf16;
      row.tol = tolerance(dtype, traits.input_unit_roundoff);
      g.inputs = traits.inputs;
    }
    announce("bench", s, dtype, kernel);
    if (!kernels::gpu_can_implement(kernel, g, &why)) row.skipped = why;
    if (row.skipped.empty()) {
      if (row.bf16_inputs) {  // float32 data (gpu_can_implement refused float64)
        bf16.make(da, db, s, stream);
        g.a = bf16.a.get();
        g.b = bf16.b.get();
      }
      kernels::gpu_prepare(kernel, ctx);
      CUDA_CHECK(cudaMemsetAsync(dc.get(), 0xFF, dc.bytes(), stream.get()));  // NaN: unwritten C fails
      // The clock and power samples cover the timed launches only.
      row.seconds = time_on_stream(
          timing, [&] { kernels::gpu_gemm(kernel, g, ctx); }, stream, [&] { telemetry.start(); });
      row.telemetry = telemetry.stop();
      row.rel_error = rel_frobenius_error(download<T>(dc, c_count, stream), ref);
    }
    progress_done(row);
    rows.push_back(std::move(row));
  }
}

#endif  // TESSERA_HAVE_CUDA

// The backend's kernels that --kernels names (all when it names none), in bench order.
std::vector<std::string> chosen_kernels(const DeviceInfo& info, const BenchOptions& opts) {
  std::vector<std::string> names;
  for (const std::string& kernel : info.kernels)
    if (opts.kernels.empty() || std::count(opts.kernels.begin(), opts.kernels.end(), kernel)) names.push_back(kernel);
  for (const std::string& kernel : opts.kernels) {
    if (!std::count(info.kernels.begin(), info.kernels.end(), kernel)) {
      throw InputError(fmt::format("bench: unknown kernel '{}' for the {} backend (choose from: {})", kernel,
                                   info.backend, fmt::join(info.kernels, ", ")));
    }
  }
  return names;
}

// What the table's numbers are: timing, accuracy, baselines, clocks.
void print_header(const DeviceInfo& info, const BenchOptions& opts) {
  fmt::print("tessera bench: {} on {}\n", info.backend, info.device);
  fmt::print("median of {} timed launches after {} warm-up(s); seed {}; {}\n", opts.repeats, opts.warmup, opts.seed,
             info.backend == "cuda" ? "CUDA events around each launch on device buffers (no copies)"
                                    : "steady_clock around each call");
  fmt::print("accuracy: relative Frobenius error vs {}; tolerance f32 {:g}, f64 {:g}", info.reference,
             tolerance(DType::f32), tolerance(DType::f64));
  if (info.backend == "cuda") {
    fmt::print(" (+ 2 u_in for kernels that round inputs: tf32 {:.2g}, bf16 {:.2g})\n", tolerance(DType::f32, 0x1p-11),
               tolerance(DType::f32, 0x1p-8));
    fmt::print(
        "% {0}: against the fastest {0} call (column vs) given the same inputs that rounds them no more: FP32 and "
        "FP64 kernels vs cublas (FP32 / FP64 compute); TF32 vs cublas-tf32 or better; BF16 kernels on float32 data "
        "vs cublas-bf16 (a rounding pass, then BF16 GEMM) or better; cublas-bf16-stored is cuBLAS's BF16 GEMM alone, "
        "on BF16 data\n",
        info.vendor_label);
    const TelemetryInfo& t = info.telemetry;
    if (t.recorded)
      fmt::print(
          "clocks: SM clock and board power sampled every {:g} ms during each kernel's timed launches, medians "
          "(power: {}; SM clock max {:.0f} MHz, power limit {:.0f} W)\n\n",
          t.period_ms, t.source, t.sm_clock_max_mhz, t.power_limit_w);
    else
      fmt::print("clocks: not recorded ({})\n\n", t.source);
  } else {
    fmt::print("\n\n");
  }
}

void write_file(const std::string& path, const std::string& text) { io::write_file_replacing(path, text); }

}  // namespace

std::vector<std::string> bench_kernel_names() {
  std::vector<std::string> names;
  for (const backend::KernelInfo& kernel : backend::kernel_catalog()) names.push_back(kernel.name);
  names.emplace_back(kCpuVendorKernel);
  return names;
}

int run_bench(const BenchOptions& opts) {
  const Timing timing = checked_timing(opts.warmup, opts.repeats, "bench");
  std::string which = opts.backend.empty() ? "auto" : opts.backend;
  if (which != "auto" && which != "cpu" && which != "cuda")
    throw InputError("bench: unknown backend '" + which + "' (choose: auto, cpu, cuda)");
  report::set_typed_options(typed_options(opts));  // the report's options: typed (commands/provenance.hpp)
  guard_bench_paths(opts);  // --json, --csv and the config (commands/command_paths.hpp), before the timings
#ifdef TESSERA_HAVE_CUDA
  const int gpus = backend::cuda_device_count();
#else
  const int gpus = 0;
#endif
  if (which == "auto") which = gpus > 0 ? "cuda" : "cpu";
  if (which == "cuda" && gpus == 0) {
#ifdef TESSERA_HAVE_CUDA
    throw InputError("bench: --backend cuda, but no GPU is visible to this process");
#else
    throw InputError("bench: --backend cuda, but this tessera was built without CUDA");
#endif
  }

#ifdef TESSERA_HAVE_CUDA
  std::unique_ptr<backend::Backend> gpu;  // chooses and holds GPU 0; names it
  std::unique_ptr<backend::GpuTelemetry> telemetry;
  if (which == "cuda") {
    gpu = backend::make_cuda_backend({0, 1});
    telemetry = std::make_unique<backend::GpuTelemetry>(gpu->device_identity().pci_bus_id);
  }
  const DeviceInfo info = which == "cuda" ? gpu_info(gpu->device(), *telemetry) : cpu_info();
#else
  const DeviceInfo info = cpu_info();
#endif

  const std::vector<Size> sizes = parse_sizes(opts.sizes, info.default_sizes, "bench");
  const std::vector<DType> dtypes = parse_dtypes(opts.dtypes, "bench");
  const std::vector<std::string> names = chosen_kernels(info, opts);

  std::vector<Row> rows;
#ifdef TESSERA_HAVE_CUDA
  std::unique_ptr<kernels::GpuContext> ctx;
  std::unique_ptr<kernels::Stream> stream;
  if (which == "cuda") {
    ctx = std::make_unique<kernels::GpuContext>();
    stream = std::make_unique<kernels::Stream>();
  }
#endif
  for (const Size& s : sizes) {
    const Inputs in(s, opts.seed);
    for (const DType t : dtypes) {
#ifdef TESSERA_HAVE_CUDA
      if (which == "cuda") {
        if (t == DType::f32)
          bench_gpu<float>(s, in, names, timing, *ctx, *stream, *telemetry, rows);
        else
          bench_gpu<double>(s, in, names, timing, *ctx, *stream, *telemetry, rows);
        continue;
      }
#endif
      if (t == DType::f32)
        bench_cpu<float>(s, in, names, timing, rows);
      else
        bench_cpu<double>(s, in, names, timing, rows);
    }
  }
  finish(rows, info);

  print_header(info, opts);
  fmt::print("{}", format_table(rows, info));
  std::fflush(stdout);

  if (!opts.json_path.empty()) write_file(opts.json_path, to_json(rows, info, opts).dump(2) + "\n");
  if (!opts.csv_path.empty()) write_file(opts.csv_path, to_csv(rows));

  const bool failed = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.status == "FAIL"; });
  if (failed) fmt::print("\nFAIL: some kernels exceeded the accuracy tolerance\n");
  return failed ? 1 : 0;
}

}  // namespace tessera::commands
