#pragma once
// The CUDA backend's GPU and host memory: which GPU a rank takes, what it is, how much memory it
// has and uses, and page-locked host memory. Internal to the backend (cuda_backend.hpp has the
// entry points for the rest of tessera).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "backend/backend.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"

namespace tessera::backend {

// Host buffers at least this large are page-locked for their copy (see HostRegistration): 32 MiB,
// below which the pageable copy cost about as much as registering (register, copy, unregister
// 2.66 ms against 3.08 ms pageable at 32 MiB on the H200 machine). TESSERA_PIN_MIN_BYTES sets
// another threshold: a diagnostic, to measure one against the other (docs/usage.md).
std::size_t pin_min_bytes();
// The same threshold for the host operands of a held product (cuda_held_gemm.cpp: numpy arrays,
// the C++ API's host matrices): 8 MiB. One H200, tessera.matmul on numpy float32 (2026-12-07,
// scripts/matmul_bench.py, alternated twice): at 2048 (16 MiB operands) 0.65 / 0.72 of torch's
// round trip page-locked against 1.03 / 1.07 pageable; at 1024 (4 MiB) page-locking did not pay
// (1.28 / 1.13 against 1.00 / 1.13). TESSERA_PIN_MIN_BYTES sets both.
std::size_t held_pin_min_bytes();

// GPU local_rank % count among the visible ones, made current. Throws DeviceError when none is.
int select_device(const Placement& where);

// "NVIDIA H200 [0000:1b:00.0]": the name, and the PCI bus id where the driver gives it.
std::string describe_device(int device);

// The GPU's name as its tune file is named for (backend/tuning.hpp), e.g. "NVIDIA H200".
std::string device_model(int device);

// Its compute capability as a tune file records it, e.g. "sm_90".
std::string device_architecture(int device);

int multiprocessors(int device);

// Device memory in use now (all of the device, every process), in bytes; 0 if unknown.
std::int64_t device_bytes_in_use();

// Bytes a GEMM may take on the GPU: `limit` (--gpu-memory) when set, else 90% of what is free now.
std::size_t memory_budget(std::size_t limit);

// Page-locked host memory (backend.hpp's HostBuffer): ordinary memory, first touched by several
// threads, then registered with CUDA; pageable where registering fails or
// TESSERA_HOST_MEMORY=pageable asks for it.
HostBuffer allocate_page_locked(std::size_t bytes);

// After a failure: waits for what was enqueued on `streams` before their buffers go, ignoring
// further errors (the first is the one reported).
inline void synchronize_quietly(std::initializer_list<cudaStream_t> streams) {
  for (cudaStream_t s : streams) (void)cudaStreamSynchronize(s);
}

// "rows x cols", for messages.
std::string shape_str(std::int64_t rows, std::int64_t cols);

// A rank's GPU as the backend's parts share it. Declaration order is construction order: the
// device is current before the stream and the cuBLAS handle are created on it.
struct Gpu {
  explicit Gpu(int id) : device(id) {}
  int device;
  std::int64_t start_used = device_bytes_in_use();  // device memory in use when the backend started
  std::int64_t peak_used = start_used;              // the most seen in use since (sampled after each GEMM)
  kernels::Stream stream;
  kernels::GpuContext context;
  // The staged GEMM's page-locked ring, kept from one GEMM to the next: page-locking a few hundred
  // MiB and freeing it costs tens of milliseconds, once per product of a launch of many otherwise.
  // Destroyed first (declared last), while the context is still there.
  HostBuffer staging;

  void note_peak() { peak_used = std::max(peak_used, device_bytes_in_use()); }
  // At least `bytes` of page-locked memory, reused while it is large enough; one user at a time.
  unsigned char* staging_of(std::size_t bytes) {
    if (staging.size() < bytes) {
      staging = HostBuffer();  // the old ring freed before the larger one is taken
      staging = allocate_page_locked(bytes);
    }
    return staging.data();
  }
};

}  // namespace tessera::backend
