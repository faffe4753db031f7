// Backend selection ("cpu", "cuda" or "auto"), what this build has, and the defaults of backend.hpp.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <utility>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/words.hpp"
#include "kernels/cpu_gemm.hpp"
#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda_backend.hpp"
#include "kernels/gpu_gemm.hpp"
#endif

namespace tessera::backend {

std::unique_ptr<Backend> make_cpu_backend();  // cpu_backend.cpp

HostBuffer allocate_pageable(std::size_t bytes) {
  if (bytes == 0) return {};
  void* p = std::malloc(bytes);
  if (!p) throw std::bad_alloc();
  return HostBuffer(p, bytes, std::free);
}

std::unique_ptr<DeviceProduct> Backend::gemm_on_device(const std::string&, const GemmProblem&) {
  throw Error("the " + name() + " backend keeps no product on a device");
}

std::vector<PhaseTime> Backend::gemm_in_place(const std::string&, const HeldProblem&) {
  throw Error("the " + name() + " backend does not multiply matrices where they lie");
}

std::vector<std::string> compiled_backends() {
#ifdef TESSERA_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

std::vector<std::string> backend_words() { return {"auto", "cpu", "cuda"}; }

const std::vector<KernelInfo>& kernel_catalog() {
  static const std::vector<KernelInfo> kCatalog = [] {
    std::vector<KernelInfo> catalog;
    for (const kernels::CpuKernel& k : kernels::cpu_kernels())
      catalog.push_back({Kind::cpu, k.name, k.summary, dtype_words(), false, k.vendor, {}});
#ifdef TESSERA_HAVE_CUDA
    for (KernelInfo& info : cuda_kernel_catalog()) catalog.push_back(std::move(info));
#endif
    return catalog;
  }();
  return kCatalog;
}

std::vector<std::string> kernel_names(Kind kind) {
  if (kind == Kind::cpu) return kernels::cpu_kernel_names();
#ifdef TESSERA_HAVE_CUDA
  return kernels::gpu_kernel_names();
#else
  return {};
#endif
}

void check_kernel(Kind kind, const std::string& kernel) {
  const std::vector<std::string> names = kernel_names(kind);
  // A build without CUDA lists no GPU kernel: the cuda backend is refused when it starts.
  if (names.empty() || std::find(names.begin(), names.end(), kernel) != names.end()) return;
  throw InputError(std::string("--kernel ") + not_one_of(kernel, names) + " (the " + kind_name(kind) +
                   " backend's kernels)");
}

bool gpu_kernel_accumulates(const std::string& kernel, DType dtype) {
#ifdef TESSERA_HAVE_CUDA
  return cuda_kernel_accumulates(kernel, dtype);
#else
  (void)kernel, (void)dtype;
  return false;
#endif
}

int visible_gpu_count() {
#ifdef TESSERA_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

namespace {
// start_gpu_early's thread, joined by finish_gpu_start. Never destroyed: a process that ends
// through exit() before joining it (MPI_Abort after a failed plan) must not meet a joinable
// std::thread's destructor, which would abort it.
std::thread& gpu_start_thread() {
  static auto* thread = new std::thread();
  return *thread;
}
std::atomic<bool> g_gpu_ready{false};  // that thread's work is done
}  // namespace

void start_gpu_early(int local_rank) {
#ifdef TESSERA_HAVE_CUDA
  if (!gpu_start_thread().joinable())
    gpu_start_thread() = std::thread([local_rank] {
      cuda_start_device(local_rank);
      g_gpu_ready.store(true);
    });
#else
  (void)local_rank;
#endif
}

void finish_gpu_start() {
  if (gpu_start_thread().joinable()) gpu_start_thread().join();
}

bool gpu_start_pending() { return gpu_start_thread().joinable() && !g_gpu_ready.load(); }

int current_gpu() {
#ifdef TESSERA_HAVE_CUDA
  return cuda_current_device();
#else
  return 0;
#endif
}

void copy_device_to_host(void* host, const void* device, std::size_t bytes) {
#ifdef TESSERA_HAVE_CUDA
  cuda_copy_to_host(host, device, bytes);
#else
  (void)host, (void)device, (void)bytes;
  throw Error("GPU memory given, but this build of tessera has no CUDA");
#endif
}

std::vector<std::string> describe_gpus() {
#ifdef TESSERA_HAVE_CUDA
  return cuda_describe_devices();
#else
  return {};
#endif
}

DeviceIdentity gpu_identity(int device) {
#ifdef TESSERA_HAVE_CUDA
  return cuda_device_identity(device);
#else
  (void)device;
  return {};
#endif
}

namespace {

class IdleBackend final : public Backend {
 public:
  explicit IdleBackend(Kind kind) : kind_(kind) {}
  Kind kind() const override { return kind_; }
  std::string device() const override { return "idle"; }
  std::vector<std::string> kernels() const override { return {}; }
  std::string default_kernel() const override { return ""; }
  std::vector<PhaseTime> gemm(const std::string&, const GemmProblem&) override { throw idle(); }
  std::unique_ptr<DeviceProduct> gemm_on_device(const std::string&, const GemmProblem&) override { throw idle(); }
  std::unique_ptr<PanelProduct> panel_product(const std::string&, DType, std::int64_t, std::int64_t, std::int64_t,
                                              void*, bool) override {
    throw idle();
  }

 private:
  static Error idle() { return Error("a rank left idle was asked to compute (a bug in tessera)"); }
  Kind kind_;
};

}  // namespace

std::unique_ptr<Backend> make_idle_backend(Kind kind) { return std::make_unique<IdleBackend>(kind); }

const char* kind_name(Kind kind) { return kind == Kind::cuda ? "cuda" : "cpu"; }

std::optional<Kind> parse_kind(const std::string& text) {
  if (text == "cpu") return Kind::cpu;
  if (text == "cuda") return Kind::cuda;
  if (text == "auto") return std::nullopt;
  throw InputError("--backend " + not_one_of(text, backend_words()));
}

std::unique_ptr<Backend> make_backend(std::optional<Kind> kind, const Placement& where) {
  if (kind == Kind::cpu) return make_cpu_backend();
#ifdef TESSERA_HAVE_CUDA
  finish_gpu_start();  // the context started beside MPI and the plan is ready
  if (cuda_device_count() > 0) return make_cuda_backend(where);
  if (kind == Kind::cuda) throw InputError("the cuda backend: no GPU is visible to this process");
#else
  (void)where;
  if (kind == Kind::cuda) throw InputError("the cuda backend: this tessera was built without CUDA");
#endif
  return make_cpu_backend();
}

std::string resolve_kernel(Kind kind, const std::string& kernel, DType dtype, std::int64_t m, std::int64_t n,
                           std::int64_t k, LoadHorizon horizon) {
  if (kernel != "auto" && !kernel.empty()) return kernel;
  if (is_complex(dtype)) return kind == Kind::cpu ? "openblas" : "cublas";  // the only complex GEMMs
  if (kind == Kind::cpu) return kernels::cpu_kernel_names().front();
#ifdef TESSERA_HAVE_CUDA
  if (cuda_device_count() > 0) return cuda_resolve_kernel(dtype, m, n, k, horizon);
#else
  (void)dtype, (void)m, (void)n, (void)k, (void)horizon;
#endif
  return kernel;  // no GPU here (a dry run for one): the backend's choice, unresolved
}

}  // namespace tessera::backend
