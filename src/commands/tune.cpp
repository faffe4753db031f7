// `tessera tune` (see tune.hpp). The timing is `tessera bench`'s (commands/bench_harness.hpp):
// device buffers, CUDA events around each launch, the median of several launches after a
// warm-up, on the same random data (never zeros). The candidates are every kernel `auto` may choose, cuBLAS's
// full-precision call among them (timed first, so that its time is the bar from the start). A
// candidate is eligible only if its result agrees with cuBLAS (FP32 / FP64 compute, same dtype)
// to well within rounding, so a broken kernel can never win.
#include "commands/tune.hpp"

#include "commands/bench_harness.hpp"
#include "report/provenance.hpp"
#include "report/repeats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backend/tuning.hpp"
#include "commands/command_paths.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "io/atomic_file.hpp"

#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda_backend.hpp"
#include "backend/cuda_device.hpp"
#include "commands/bench_harness_cuda.hpp"
#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"
#endif

namespace tessera::commands {

using backend::default_tune_output;
using backend::read_tune_file;
using backend::TunedChoice;
using backend::TuneTable;

namespace {

[[maybe_unused]] constexpr const char* kFormat = backend::kTuneFileFormat;  // CUDA builds write it

using bench::short_name;
using bench::Size;

}  // namespace

// ---- `tessera tune` ------------------------------------------------------------------------------

#ifdef TESSERA_HAVE_CUDA
namespace {

struct Result {
  std::string kernel;
  double median_s = std::numeric_limits<double>::quiet_NaN();
  std::string note;  // why it is not eligible
};

// The kernels `auto` may choose, the cuBLAS call first: a kernel more than 3x behind the best so
// far is ruled out after one timed launch, and cuBLAS sets that bar at once.
std::vector<std::string> candidates_vendor_first() {
  std::vector<std::string> names = kernels::gpu_auto_candidates();
  std::stable_partition(names.begin(), names.end(), [](const std::string& kernel) {
    kernels::GpuKernelTraits traits;
    return kernels::gpu_kernel_traits(kernel, &traits) && traits.vendor;
  });
  return names;
}

template <class T>
TunedChoice tune_one(const Size& s, const bench::Inputs& in, const bench::Timing& timing, kernels::GpuContext& ctx,
                     const kernels::Stream& stream, std::map<std::string, double>& gflops_of) {
  const DType dtype = sizeof(T) == 4 ? DType::f32 : DType::f64;
  // Agreement with cuBLAS in the same dtype: rounding differences are ~1e-6 (f32) and ~1e-15
  // (f64) in relative Frobenius norm; a wrong kernel is off by O(1).
  const double agree = dtype == DType::f32 ? 1e-4 : 1e-10;
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  const kernels::DeviceBuffer da = bench::upload(bench::rounded<T>(in.a), "A", stream);
  const kernels::DeviceBuffer db = bench::upload(bench::rounded<T>(in.b), "B", stream);
  const kernels::DeviceBuffer dc(mn * sizeof(T), "C");
  const kernels::GpuGemm g{dtype, s.m, s.n, s.k, da.get(), db.get(), dc.get(), stream.get()};

  std::vector<T> ref;
  if (kernels::gpu_can_implement("cublas", g)) {
    kernels::gpu_gemm("cublas", g, ctx);
    ref = bench::download<T>(dc, mn, stream);
  }

  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  std::vector<Result> results;
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& kernel : candidates_vendor_first()) {
    Result r;
    r.kernel = kernel;
    std::string why;
    if (!kernels::gpu_can_implement(kernel, g, &why)) continue;  // e.g. dmma on float32
    bench::announce("tune", s, dtype, kernel);
    kernels::gpu_prepare(kernel, ctx);
    CUDA_CHECK(cudaMemsetAsync(dc.get(), 0xFF, mn * sizeof(T), stream.get()));  // NaN: unwritten C fails
    // Far behind the best so far: one timing is enough to rule it out.
    const bench::Timing limited{timing.warmup, timing.repeats, 3 * best};
    r.median_s = report::spread(bench::time_on_stream(
                                    limited, [&] { kernels::gpu_gemm(kernel, g, ctx); }, stream))
                     .median;
    if (!ref.empty()) {
      const double d = bench::rel_frobenius_error(bench::download<T>(dc, mn, stream), ref);
      if (!(d <= agree)) r.note = fmt::format("disagrees with cuBLAS (rel. diff {:.2e})", d);
    }
    if (r.note.empty()) best = std::min(best, r.median_s);
    std::fprintf(stderr, " %.3f ms%s%s\n", r.median_s * 1e3, r.note.empty() ? "" : ": ", r.note.c_str());
    results.push_back(std::move(r));
  }
  TunedChoice choice{dtype, s.m, s.n, s.k, "", 0.0, {}};
  std::map<std::string, double> seconds_of;  // the kernels that computed correctly
  for (const Result& r : results) {
    gflops_of[r.kernel] = flops / r.median_s * 1e-9;
    if (r.note.empty()) seconds_of[r.kernel] = r.median_s;
  }
  choice.kernel = backend::tune_winner(seconds_of);  // cuBLAS unless beaten by a clear margin
  if (choice.kernel.empty())
    throw DeviceError(fmt::format("tune: no kernel computed {}x{}x{} {} correctly", s.m, s.n, s.k, short_name(dtype)));
  choice.gflops = flops / seconds_of.at(choice.kernel) * 1e-9;
  return choice;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32] = {};
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// What cuBLAS costs a process before its first GEMM (libraries, handle, the first launch's
// modules), measured first, while nothing has loaded it: `auto` weighs it against the time an
// own kernel would lose over a whole job (backend::whole_job_kernel).
std::map<std::string, double> library_load_seconds(DType dtype) {
  std::map<std::string, double> seconds;
  if (kernels::cublas_loaded()) return seconds;
  const auto t0 = std::chrono::steady_clock::now();
  kernels::gpu_warm_up("cublas", dtype, 0);
  seconds["cublas"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return seconds;
}

nlohmann::json choice_json(const TunedChoice& c, const std::map<std::string, double>& candidates) {
  return {
      {"dtype", short_name(c.dtype)}, {"m", c.m}, {"n", c.n}, {"k", c.k}, {"kernel", c.kernel}, {"gflops", c.gflops},
      {"candidates", candidates}};
}

}  // namespace
#endif  // TESSERA_HAVE_CUDA

int run_tune(const TuneOptions& opts) {
  // Options and the file to write first, before any GPU work (commands/command_paths.hpp).
  [[maybe_unused]] bench::Timing timing = bench::checked_timing(opts.warmup, opts.repeats, "tune");
  timing.warmup = std::max(timing.warmup, 1);  // a first launch may load a library or a module
  const std::vector<Size> sizes = bench::parse_sizes(opts.sizes, {"1024", "2048", "4096", "8192"}, "tune");
  const std::vector<DType> dtypes = bench::parse_dtypes(opts.dtypes, "tune");
  if (!opts.out.empty()) guard_tune_paths(opts.out, opts.config);
#ifndef TESSERA_HAVE_CUDA
  throw InputError("tune: this tessera was built without CUDA; tuning is for the GPU kernels");
#else
  if (backend::cuda_device_count() == 0) throw InputError("tune: no GPU is visible to this process");

  const auto gpu = backend::make_cuda_backend({0, 1});  // chooses and holds GPU 0
  const std::string device = gpu->device().substr(0, gpu->device().find(" ["));
  const std::string out = opts.out.empty() ? default_tune_output(device) : opts.out;
  {
    std::error_code made;  // the default cache folder may not exist yet
    const std::filesystem::path out_path(out);
    if (out_path.has_parent_path()) std::filesystem::create_directories(out_path.parent_path(), made);
    guard_tune_paths(out, opts.config);
  }

  const std::map<std::string, double> load_seconds = library_load_seconds(dtypes.front());

  kernels::GpuContext ctx;
  kernels::Stream stream;
  std::vector<TunedChoice> choices;
  std::vector<std::map<std::string, double> > candidates;
  for (const DType t : dtypes) {
    for (const Size& s : sizes) {
      std::map<std::string, double> gflops_of;
      const bench::Inputs in(s, opts.seed);
      choices.push_back(t == DType::f32 ? tune_one<float>(s, in, timing, ctx, stream, gflops_of)
                                        : tune_one<double>(s, in, timing, ctx, stream, gflops_of));
      candidates.push_back(std::move(gflops_of));
    }
  }

  // Merge: keep the file's choices for sizes and dtypes not measured now.
  nlohmann::json list = nlohmann::json::array();
  nlohmann::json libraries = nlohmann::json::object();
  std::error_code ec;
  if (std::filesystem::is_regular_file(out, ec)) {
    const TuneTable old = read_tune_file(out);
    for (const auto& [name, seconds] : old.load_seconds) libraries[name] = {{"load_seconds", seconds}};
    for (const TunedChoice& c : old.choices) {
      const bool replaced = std::any_of(choices.begin(), choices.end(), [&](const TunedChoice& x) {
        return x.dtype == c.dtype && x.m == c.m && x.n == c.n && x.k == c.k;
      });
      if (!replaced) list.push_back(choice_json(c, c.candidates));
    }
  }
  for (const auto& [name, seconds] : load_seconds) libraries[name] = {{"load_seconds", seconds}};
  for (std::size_t i = 0; i < choices.size(); ++i) {
    list.push_back(choice_json(choices[i], candidates[i]));
  }
  const nlohmann::json doc = {
      {"schema", report::kTuneSchema},
      {"format", kFormat},
      {"device", device},
      {"architecture", backend::device_architecture(gpu->device_id())},
      {"created", utc_now()},
      {"tessera_version", kVersion},
      {"timing", fmt::format("median of {} launches after {} warm-up(s), CUDA events", timing.repeats, timing.warmup)},
      {"libraries", libraries},
      {"choices", list}};
  io::write_file_replacing(out, doc.dump(2) + "\n");

  fmt::print("tessera tune: {} ({} launches per candidate, median)\n", device, opts.repeats);
  fmt::print("{:<16} {:<5} {:<18} {:>10}   {}\n", "size", "dtype", "winner", "GFLOP/s", "runner-up");
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const TunedChoice& c = choices[i];
    std::string second;
    double second_gf = 0;
    for (const auto& [name, gf] : candidates[i])
      if (name != c.kernel && gf > second_gf) {
        second = name;
        second_gf = gf;
      }
    fmt::print("{:<16} {:<5} {:<18} {:>10.1f}   {}\n", fmt::format("{}x{}x{}", c.m, c.n, c.k), short_name(c.dtype),
               c.kernel, c.gflops, second.empty() ? std::string("-") : fmt::format("{} {:.1f}", second, second_gf));
  }
  for (const auto& [name, seconds] : load_seconds)
    fmt::print("{}: {:.3f} s to load and warm up (weighed by --kernel auto against the kernels' times)\n", name,
               seconds);
  fmt::print("wrote {}\n", out);
  return 0;
#endif
}

}  // namespace tessera::commands
