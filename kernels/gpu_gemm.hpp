#pragma once
// GPU GEMM kernels behind one dispatcher: C = A * B on device memory, row-major and contiguous
// (A is m x k, B is k x n, C is m x n), asynchronously on a stream. Kernels are chosen by name
// from a registry ("naive", "naive16", "tiled16", "tiled32", "cublas", ...); the CUDA backend and
// `tessera bench` list them from here, so a kernel added to the registry shows up in both.
// Knows nothing of MPI, HDF5 or the CLI.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

struct cublasContext;  // cublasHandle_t is cublasContext*; kept out of this header

namespace tessera::kernels {

// One GEMM on device memory. Sizes may be 0 (nothing to do, or C = 0 when k == 0).
struct GpuGemm {
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // device, m x k
  const void* b = nullptr;  // device, k x n
  void* c = nullptr;        // device, m x n
  cudaStream_t stream = nullptr;
};

// Per-device state the kernels share: a cuBLAS handle, created on first use on the current
// device with pedantic math (FP32 stays FP32: no TF32, no reduced-precision reductions).
// One context per device and thread; not thread-safe.
class GpuContext {
 public:
  GpuContext() = default;
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cublasContext* cublas();

 private:
  cublasContext* cublas_ = nullptr;
};

// Registered kernel names, in bench order (the naive baseline first, cuBLAS last).
std::vector<std::string> gpu_kernel_names();

// A one-line description of a kernel ("" for an unknown name).
std::string gpu_kernel_summary(const std::string& kernel);

// Whether `kernel` can run a problem of g's type and sizes (the kernel exists, the sizes are
// valid and within its limits; the pointers are not looked at, so this may be asked before
// allocating); when not, `why` (if given) says why in one line. Touches no device.
bool gpu_can_implement(const std::string& kernel, const GpuGemm& g, std::string* why = nullptr);

// Enqueues C = A * B on g.stream and returns without waiting. Throws InputError when the
// kernel is unknown or cannot implement the problem (the message says why), DeviceError when
// a CUDA or cuBLAS call fails.
void gpu_gemm(const std::string& kernel, const GpuGemm& g, GpuContext& ctx);

}  // namespace tessera::kernels
