#pragma once
// What a GPU kernel file provides to the registry (kernels/gpu_gemm.cu), and the helpers those
// files share. Internal to kernels/: callers use kernels/gpu_gemm.hpp.
//
// Adding a kernel: write kernels/<technique>.cu with a function `std::vector<GpuKernel>
// <technique>_kernels()` returning its variants, declare it below, and add it to the list in
// gpu_gemm.cu. The backend, the bench and the GPU tests pick it up from the registry.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_gemm.hpp"

namespace tessera::kernels {

struct GpuKernel {
  std::string name;
  std::string summary;
  // Limits of this kernel beyond the dispatcher's own checks (sizes >= 0, non-null pointers);
  // nullptr when it has none. On false, sets *why.
  bool (*can_implement)(const GpuGemm& g, std::string* why) = nullptr;
  // Enqueue on g.stream; called only with m, n, k >= 1. Throws DeviceError on failure.
  void (*run)(const GpuGemm& g, GpuContext& ctx) = nullptr;
};

// The technique files.
std::vector<GpuKernel> naive_kernels();   // kernels/naive.cu
std::vector<GpuKernel> tiled_kernels();   // kernels/tiled.cu
std::vector<GpuKernel> cublas_kernels();  // kernels/cublas_gemm.cu

// ---- helpers for launchers -------------------------------------------------------------------

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Hardware limits of a grid (all GPUs since compute capability 3.0).
inline constexpr std::int64_t kMaxGridX = 2147483647;  // 2^31 - 1
inline constexpr std::int64_t kMaxGridY = 65535;

// Grid for kernels where block (x, y) computes the tile_n x tile_m tile of C at tile column x,
// row y: one block per tile where the limits allow, fewer otherwise, and then the kernel
// strides over the remaining tiles (blockIdx + gridDim). So M and N may exceed 65535 * tile.
inline dim3 tile_grid(std::int64_t m, std::int64_t n, int tile_m, int tile_n) {
  const std::int64_t tiles_m = ceil_div(m, tile_m);
  const std::int64_t tiles_n = ceil_div(n, tile_n);
  return dim3(static_cast<unsigned>(std::min(tiles_n, kMaxGridX)),
              static_cast<unsigned>(std::min(tiles_m, kMaxGridY)), 1);
}

}  // namespace tessera::kernels
