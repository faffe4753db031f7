// The CUDA backend's kernel choice (cuda_kernel_choice.hpp) and the defaults it falls back to.
#include "backend/cuda_kernel_choice.hpp"

#include <atomic>

#include "backend/cuda_backend.hpp"
#include "backend/cuda_device.hpp"
#include "core/log.hpp"
#include "kernels/cublas_library.hpp"
#include "kernels/gpu_gemm.hpp"

namespace tessera::backend {
namespace {

// `--kernel auto` without a tune file (this GPU's or a sibling's of its architecture): cuBLAS's
// full-precision GEMM (FP32 / FP64 compute, never TF32), which NVIDIA tunes for every GPU; on the
// H200 it was the fastest float32 GEMM at every size measured and the fastest float64 one at
// 4096-16384 (docs/kernels.md). A tune file written by `tessera tune` on this GPU names the
// measured winner per size, tessera's own kernel where that was faster; and where the winner is
// cuBLAS, a job that cuBLAS would not finish sooner, counting the 0.1-0.25 s its libraries take to
// load, runs the fastest own kernel instead.
constexpr const char* kDefaultKernel = "cublas";

// A kernel a tune file may name for `auto`: registered, not opt-in (no reduced precision), and
// taking this dtype (dmma is float64 only).
bool usable(const std::string& kernel, DType dtype) {
  kernels::GpuKernelTraits traits;
  return kernels::gpu_kernel_traits(kernel, &traits) && !traits.opt_in &&
         kernels::gpu_can_implement(kernel, kernels::GpuGemm{dtype, 1, 1, 1});
}

TuneTable load_tuned(int device, std::vector<std::string>* warnings) {
  std::vector<std::string> skipped;
  TuneTable table = load_tune_table(device_model(device), device_architecture(device), &skipped);
  for (const std::string& why : skipped) log::debug("tune file of another GPU skipped: " + why);
  static std::atomic<bool> said{false};  // the plan and each backend read the table: say it once
  if (table.sibling && !said.exchange(true))
    log::info("no tune file for " + device_model(device) + ": --kernel auto chooses by " + table.path + ", tuned on " +
              table.device + " (" + table.architecture +
              ", the same architecture); `tessera tune` measures this GPU's own");
  for (const auto& c : table.choices) {
    if (!usable(c.kernel, c.dtype)) {
      warnings->push_back("tune file " + table.path + " names kernel '" + c.kernel +
                          "', which this build cannot choose for " + dtype_name(c.dtype) +
                          "; using the built-in choice there");
    }
  }
  return table;
}

}  // namespace

KernelChoice::KernelChoice(int device, std::vector<std::string>* warnings) : tuned_(load_tuned(device, warnings)) {}

std::string KernelChoice::default_kernel() const {
  const TunedChoice* largest = nullptr;
  for (const auto& c : tuned_.choices)
    if (c.dtype == DType::f32 && usable(c.kernel, c.dtype) &&
        (!largest || c.m * c.n * c.k > largest->m * largest->n * largest->k))
      largest = &c;
  return largest ? largest->kernel : kDefaultKernel;
}

std::string KernelChoice::resolve(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                                  LoadHorizon horizon) const {
  const kernels::GpuGemm gemm{dtype, m, n, k};
  const TunedChoice* tuned = tuned_choice(tuned_, dtype, m, n, k);
  if (!tuned) return kDefaultKernel;
  const auto runs_here = [&](const std::string& kernel) {
    return usable(kernel, dtype) && kernels::gpu_can_implement(kernel, gemm);
  };
  const auto needs_library = [](const std::string& kernel) {
    kernels::GpuKernelTraits traits;
    return kernels::gpu_kernel_traits(kernel, &traits) && traits.needs_cublas;
  };
  // A library this process has loaded already costs nothing more; nor, over a process's calls to
  // come, one it has not.
  const auto measured = tuned_.load_seconds.find("cublas");
  double load = measured != tuned_.load_seconds.end() ? measured->second : kDefaultLibraryLoadSeconds;
  if (horizon == LoadHorizon::process || kernels::cublas_loaded()) load = 0.0;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const std::string chosen = whole_job_kernel(*tuned, flops, load, needs_library, runs_here);
  return runs_here(chosen) ? chosen : kDefaultKernel;
}

std::vector<KernelInfo> cuda_kernel_catalog() {
  std::vector<KernelInfo> catalog;
  for (const std::string& name : kernels::gpu_kernel_names()) {
    kernels::GpuKernelTraits traits;
    kernels::gpu_kernel_traits(name, &traits);
    KernelInfo info{Kind::cuda, name, traits.summary, {}, traits.opt_in, traits.vendor, {}};
    // The dtypes it can run at some large size (N a multiple of 4 or not: the staged kernels take
    // only the latter); the pointers are not looked at.
    for (const DType dtype : {DType::f32, DType::f64}) {
      kernels::GpuGemm g{dtype, 4096, 4096, 4096};
      g.inputs = traits.inputs;
      kernels::GpuGemm odd = g;
      odd.n = 4097;
      if (kernels::gpu_can_implement(name, g) || kernels::gpu_can_implement(name, odd))
        info.dtypes.emplace_back(dtype == DType::f32 ? "f32" : "f64");
    }
    if (traits.needs_sm90a) info.needs.emplace_back("sm_90a");
    if (traits.needs_cublas) info.needs.emplace_back("cuBLAS");
    catalog.push_back(std::move(info));
  }
  return catalog;
}

bool cuda_kernel_accumulates(const std::string& kernel, DType dtype) {
  (void)dtype;  // the built-in default is the same for both dtypes
  const std::string name = kernel.empty() || kernel == "auto" ? kDefaultKernel : kernel;
  kernels::GpuKernelTraits traits;
  return kernels::gpu_kernel_traits(name, &traits) && traits.accumulates;
}

}  // namespace tessera::backend
