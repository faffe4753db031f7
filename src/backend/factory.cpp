// Backend selection ("cpu", "cuda" or "auto"), what this build has, and the defaults of backend.hpp.
#include <cstdlib>
#include <new>
#include <thread>

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
