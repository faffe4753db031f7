// `tessera tune` (see tune.hpp). The timing follows `tessera bench`: device
// buffers, CUDA events around each launch, the median of several launches after a warm-up, on
// random data (never zeros). The candidates are every kernel `auto` may choose, cuBLAS's
// full-precision call among them (timed first, so that its time is the bar from the start). A
// candidate is eligible only if its result agrees with cuBLAS (FP32 / FP64 compute, same dtype)
// to well within rounding, so a broken kernel can never win.
#include "commands/tune.hpp"

#include "commands/gemm_size.hpp"
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

constexpr const char* kFormat = backend::kTuneFileFormat;

[[maybe_unused]] const char* short_name(DType t) { return t == DType::f32 ? "f32" : "f64"; }

DType parse_dtype(const std::string& text) {
  if (text == "f32" || text == "float32") return DType::f32;
  if (text == "f64" || text == "float64") return DType::f64;
  throw InputError("tune: dtype '" + text + "' is not f32 or f64");
}

using Size = GemmSize;

Size parse_size(const std::string& text) { return parse_gemm_size(text, "tune"); }

}  // namespace

// ---- `tessera tune` ------------------------------------------------------------------------------

#ifdef TESSERA_HAVE_CUDA
namespace {

// Uniform [-1, 1) from a counter-based hash (splitmix64): fast for hundreds of MB, reproducible.
template <class T>
std::vector<T> random_matrix(std::size_t count, std::uint64_t seed) {
  std::vector<T> x(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    x[i] = static_cast<T>(static_cast<double>(z >> 11) * 0x1p-52 - 1.0);
  }
  return x;
}

template <class T>
std::vector<T> download(const kernels::DeviceBuffer& d, std::size_t count, const kernels::Stream& s) {
  std::vector<T> x(count);
  CUDA_CHECK(cudaMemcpyAsync(x.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  return x;
}

template <class T>
double rel_diff(const std::vector<T>& c, const std::vector<T>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double d = static_cast<double>(c[i]) - static_cast<double>(ref[i]);
    diff += d * d;
    norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);  // NaN stays NaN
}

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
TunedChoice tune_one(const Size& s, const TuneOptions& opts, kernels::GpuContext& ctx, const kernels::Stream& stream,
                     std::map<std::string, double>& gflops_of) {
  const DType dtype = sizeof(T) == 4 ? DType::f32 : DType::f64;
  // Agreement with cuBLAS in the same dtype: rounding differences are ~1e-6 (f32) and ~1e-15
  // (f64) in relative Frobenius norm; a wrong kernel is off by O(1).
  const double agree = dtype == DType::f32 ? 1e-4 : 1e-10;
  const auto mk = static_cast<std::size_t>(s.m * s.k), kn = static_cast<std::size_t>(s.k * s.n);
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  const std::vector<T> a = random_matrix<T>(mk, opts.seed), b = random_matrix<T>(kn, opts.seed + 1);
  kernels::DeviceBuffer da(mk * sizeof(T), "A"), db(kn * sizeof(T), "B"), dc(mn * sizeof(T), "C");
  CUDA_CHECK(cudaMemcpyAsync(da.get(), a.data(), mk * sizeof(T), cudaMemcpyHostToDevice, stream.get()));
  CUDA_CHECK(cudaMemcpyAsync(db.get(), b.data(), kn * sizeof(T), cudaMemcpyHostToDevice, stream.get()));
  const kernels::GpuGemm g{dtype, s.m, s.n, s.k, da.get(), db.get(), dc.get(), stream.get()};

  std::vector<T> ref;
  if (kernels::gpu_can_implement("cublas", g)) {
    kernels::gpu_gemm("cublas", g, ctx);
    ref = download<T>(dc, mn, stream);
  }

  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  std::vector<Result> results;
  double best = std::numeric_limits<double>::infinity();
  kernels::Event start, stop;
  for (const std::string& kernel : candidates_vendor_first()) {
    Result r;
    r.kernel = kernel;
    std::string why;
    if (!kernels::gpu_can_implement(kernel, g, &why)) continue;  // e.g. dmma on float32
    std::fprintf(stderr, "tune: %lldx%lldx%lld %s %s ...", static_cast<long long>(s.m), static_cast<long long>(s.n),
                 static_cast<long long>(s.k), short_name(dtype), kernel.c_str());
    kernels::gpu_prepare(kernel, ctx);
    CUDA_CHECK(cudaMemsetAsync(dc.get(), 0xFF, mn * sizeof(T), stream.get()));  // NaN: unwritten C fails
    for (int i = 0; i < std::max(opts.warmup, 1); ++i) kernels::gpu_gemm(kernel, g, ctx);
    std::vector<double> times;
    for (int i = 0; i < opts.repeats; ++i) {
      start.record(stream.get());
      kernels::gpu_gemm(kernel, g, ctx);
      stop.record(stream.get());
      times.push_back(stop.seconds_since(start));
      // Far behind the best so far: one timing is enough to rule it out.
      if (i == 0 && times[0] > 3 * best) break;
    }
    r.median_s = report::spread(times).median;
    if (!ref.empty()) {
      const double d = rel_diff(download<T>(dc, mn, stream), ref);
      if (!(d <= agree)) r.note = fmt::format("disagrees with cuBLAS (rel. diff {:.2e})", d);
    }
    if (r.note.empty()) best = std::min(best, r.median_s);
    std::fprintf(stderr, " %.3f ms%s%s\n", r.median_s * 1e3, r.note.empty() ? "" : ": ", r.note.c_str());
    results.push_back(std::move(r));
  }
  TunedChoice choice{dtype, s.m, s.n, s.k, "", 0.0};
  for (const Result& r : results) {
    gflops_of[r.kernel] = flops / r.median_s * 1e-9;
    if (r.note.empty() && r.median_s == best) {
      choice.kernel = r.kernel;
      choice.gflops = flops / r.median_s * 1e-9;
    }
  }
  if (choice.kernel.empty())
    throw DeviceError(fmt::format("tune: no kernel computed {}x{}x{} {} correctly", s.m, s.n, s.k, short_name(dtype)));
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

}  // namespace
#endif  // TESSERA_HAVE_CUDA

int run_tune(const TuneOptions& opts) {
  // Options and the file to write first, before any GPU work (commands/command_paths.hpp).
  if (opts.repeats < 1) throw InputError("tune: --repeats must be at least 1");
  if (opts.warmup < 0) throw InputError("tune: --warmup must not be negative");
  std::vector<Size> sizes;
  for (const std::string& t :
       opts.sizes.empty() ? std::vector<std::string>{"1024", "2048", "4096", "8192"} : opts.sizes)
    sizes.push_back(parse_size(t));
  std::vector<DType> dtypes;
  for (const std::string& t : opts.dtypes.empty() ? std::vector<std::string>{"f32", "f64"} : opts.dtypes)
    dtypes.push_back(parse_dtype(t));
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

  kernels::GpuContext ctx;
  kernels::Stream stream;
  std::vector<TunedChoice> choices;
  std::vector<std::map<std::string, double> > candidates;
  for (const DType t : dtypes) {
    for (const Size& s : sizes) {
      std::map<std::string, double> gflops_of;
      choices.push_back(t == DType::f32 ? tune_one<float>(s, opts, ctx, stream, gflops_of)
                                        : tune_one<double>(s, opts, ctx, stream, gflops_of));
      candidates.push_back(std::move(gflops_of));
    }
  }

  // Merge: keep the file's choices for sizes and dtypes not measured now.
  nlohmann::json list = nlohmann::json::array();
  std::error_code ec;
  if (std::filesystem::is_regular_file(out, ec)) {
    const TuneTable old = read_tune_file(out);
    for (const TunedChoice& c : old.choices) {
      const bool replaced = std::any_of(choices.begin(), choices.end(), [&](const TunedChoice& x) {
        return x.dtype == c.dtype && x.m == c.m && x.n == c.n && x.k == c.k;
      });
      if (!replaced)
        list.push_back({{"dtype", short_name(c.dtype)},
                        {"m", c.m},
                        {"n", c.n},
                        {"k", c.k},
                        {"kernel", c.kernel},
                        {"gflops", c.gflops}});
    }
  }
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const TunedChoice& c = choices[i];
    list.push_back({{"dtype", short_name(c.dtype)},
                    {"m", c.m},
                    {"n", c.n},
                    {"k", c.k},
                    {"kernel", c.kernel},
                    {"gflops", c.gflops},
                    {"candidates", candidates[i]}});
  }
  const nlohmann::json doc = {{"schema", report::kTuneSchema},
                              {"format", kFormat},
                              {"device", device},
                              {"created", utc_now()},
                              {"tessera_version", kVersion},
                              {"timing", fmt::format("median of {} launches after {} warm-up(s), CUDA events",
                                                     opts.repeats, std::max(opts.warmup, 1))},
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
  fmt::print("wrote {}\n", out);
  return 0;
#endif
}

}  // namespace tessera::commands
