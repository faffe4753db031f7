// Backend selection ("cpu", "cuda" or "auto"), what this build has, and the defaults of backend.hpp.
#include <cstdlib>
#include <new>
#include <thread>
#include <utility>

#include "backend/backend.hpp"
#include "core/error.hpp"
#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda_backend.hpp"
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

std::vector<std::string> compiled_backends() {
#ifdef TESSERA_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
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
std::thread g_gpu_start;  // start_gpu_early's thread, joined by finish_gpu_start
}  // namespace

void start_gpu_early(int local_rank) {
#ifdef TESSERA_HAVE_CUDA
  if (!g_gpu_start.joinable()) g_gpu_start = std::thread([local_rank] { cuda_start_device(local_rank); });
#else
  (void)local_rank;
#endif
}

void finish_gpu_start() {
  if (g_gpu_start.joinable()) g_gpu_start.join();
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
  explicit IdleBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
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
  std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_idle_backend(const std::string& backend_name) {
  return std::make_unique<IdleBackend>(backend_name);
}

std::unique_ptr<Backend> make_backend(const std::string& name, const Placement& where) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda" || name == "auto") {
#ifdef TESSERA_HAVE_CUDA
    if (cuda_device_count() > 0) return make_cuda_backend(where);
    if (name == "cuda") throw InputError("--backend cuda: no GPU is visible to this process");
#else
    (void)where;
    if (name == "cuda") throw InputError("--backend cuda: this tessera was built without CUDA");
#endif
    return make_cpu_backend();
  }
  throw InputError("unknown backend '" + name + "' (choose: auto, cpu, cuda)");
}

}  // namespace tessera::backend
