// The CUDA backend's GPU and host memory (cuda_device.hpp), and the GPU queries of cuda_backend.hpp.
#include "backend/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "backend/cuda_backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

std::string pci_bus_id(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  std::string text = id;
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return text;
}

// Zeroes [p, p + bytes) with up to 8 threads (64 MiB or more each), so the kernel maps the
// pages in parallel rather than in the one thread that registers them afterwards.
void touch_in_parallel(unsigned char* p, std::size_t bytes) {
  const auto threads = static_cast<std::size_t>(std::clamp<std::size_t>(bytes >> 26, 1, 8));
  std::vector<std::thread> pool;
  const auto part = [&](std::size_t t) {
    const std::size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
    std::memset(p + begin, 0, end - begin);
  };
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(part, t);
  part(0);
  for (auto& th : pool) th.join();
}

// cudaGetDeviceProperties asks the driver for every attribute (milliseconds); a device's do not
// change while the process runs, and a launch of many products asks for them at every product.
// Failures are not kept: the next call asks again. Thread-safe.
cudaError_t cached_properties(int device, cudaDeviceProp* prop) {
  static std::mutex mutex;
  static std::map<int, cudaDeviceProp> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(device); it != known.end()) {
    *prop = it->second;
    return cudaSuccess;
  }
  const cudaError_t err = cudaGetDeviceProperties(prop, device);
  if (err == cudaSuccess) known.emplace(device, *prop);
  return err;
}

cudaDeviceProp properties(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cached_properties(device, &prop));
  return prop;
}

}  // namespace

int select_device(const Placement& where) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw DeviceError(std::string("cuda backend: no GPU visible to this process (") +
                      (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
                      "); check the driver, CUDA_VISIBLE_DEVICES and the job's GPU binding");
  }
  const int device = std::max(where.local_rank, 0) % count;
  CUDA_CHECK(cudaSetDevice(device));
  // Whether ranks share a GPU is decided by the caller, which can compare the PCI bus ids of
  // all ranks on the node (under srun --gpus-per-task=1 each rank sees "GPU 0", a different one).
  return device;
}

std::string describe_device(int device) {
  const std::string pci = pci_bus_id(device);
  return std::string(properties(device).name) + (pci.empty() ? "" : " [" + pci + "]");
}

std::string device_model(int device) { return properties(device).name; }

std::string device_architecture(int device) {
  const cudaDeviceProp& p = properties(device);
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
}

int multiprocessors(int device) {
  int count = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

std::int64_t device_bytes_in_use() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<std::int64_t>(total_bytes - free_bytes);
}

std::size_t memory_budget(std::size_t limit) {
  if (limit > 0) return limit;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return SIZE_MAX;  // unknown: try in core, and let an allocation failure speak
  }
  return free_bytes / 10 * 9;
}

std::size_t pin_min_bytes() {
  static const auto bytes =
      static_cast<std::size_t>(env::whole("TESSERA_PIN_MIN_BYTES").value_or(std::int64_t{32} << 20));
  return bytes;
}

std::size_t held_pin_min_bytes() {
  static const auto bytes =
      static_cast<std::size_t>(env::whole("TESSERA_PIN_MIN_BYTES").value_or(std::int64_t{8} << 20));
  return bytes;
}

// cudaHostAlloc zeroes and locks the pages in one thread, about 0.37 s per GiB on the H200
// machine, which cost more than the copies it speeds up: hence touching in parallel, then
// registering. If registering fails (a locked-memory limit), the memory stays pageable: slower
// copies, same results.
HostBuffer allocate_page_locked(std::size_t bytes) {
  if (bytes == 0) return {};
  // Diagnostic: TESSERA_HOST_MEMORY=pageable skips page-locking (docs/performance.md compares).
  if (env::word("TESSERA_HOST_MEMORY").value_or("pinned") == "pageable")
    return allocate_pageable(bytes);
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, rounded);
  if (!p) throw std::bad_alloc();
  touch_in_parallel(static_cast<unsigned char*>(p), rounded);
  if (cudaHostRegister(p, rounded, cudaHostRegisterDefault) == cudaSuccess)
    return HostBuffer(p, bytes, [](void* q) {
      (void)cudaHostUnregister(q);
      std::free(q);
    });
  (void)cudaGetLastError();
  return HostBuffer(p, bytes, std::free);
}

std::string shape_str(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

int cuda_current_device() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return device;
}

void cuda_copy_to_host(void* host, const void* device, std::size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, no device: not an error here
    return 0;
  }
  return count;
}

DeviceIdentity cuda_device_identity(int device) {
  DeviceIdentity id;
  cudaDeviceProp prop{};
  if (cached_properties(device, &prop) != cudaSuccess) {
    (void)cudaGetLastError();
    return id;
  }
  // "GPU-" and 16 bytes in hex, grouped 8-4-4-4-12, as nvidia-smi -L prints them.
  id.uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id.uuid += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
    id.uuid += hex;
  }
  id.pci_bus_id = pci_bus_id(device);
  return id;
}

void cuda_start_device(int local_rank) {
  const int count = cuda_device_count();
  if (count > 0 && cudaSetDevice(std::max(local_rank, 0) % count) == cudaSuccess) (void)cudaFree(nullptr);
  (void)cudaGetLastError();
}

std::vector<std::string> cuda_describe_devices() {
  std::vector<std::string> lines;
  const int count = cuda_device_count();
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop{};
    if (cached_properties(device, &prop) != cudaSuccess) {
      (void)cudaGetLastError();
      lines.push_back(std::to_string(device) + ": (properties unavailable)");
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line, "%d: %s (sm_%d%d, %.1f GiB, %d SMs)", device, prop.name, prop.major, prop.minor,
                  static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), prop.multiProcessorCount);
    lines.emplace_back(line);
  }
  return lines;
}

}  // namespace tessera::backend
