// Naive GEMM: one thread per element of C, each computing a full dot product of a row of A
// and a column of B straight from global memory. It is the baseline the faster kernels are
// measured against: obviously right, and slow because every element of A and B is fetched
// once per use (k times per element of C) rather than once per tile.
//
// Blocks are BLOCK x BLOCK threads with threadIdx.x along the columns of C, so the 32 threads
// of a warp read consecutive elements of a row of B and write consecutive elements of C
// (coalesced), while they all read the same element of A (a broadcast).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {
namespace {

template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK* BLOCK)
    naive_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* __restrict__ a, const T* __restrict__ b,
                      T* __restrict__ c) {
  const std::int64_t tiles_m = ceil_div(m, BLOCK);
  const std::int64_t tiles_n = ceil_div(n, BLOCK);
  // The grid is capped at the hardware limits (gridDim.y <= 65535), so when M or N is huge a
  // block strides over several tiles of C; usually each loop runs once.
  for (std::int64_t tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
    const std::int64_t row = tile_m * BLOCK + threadIdx.y;
    for (std::int64_t tile_n = blockIdx.x; tile_n < tiles_n; tile_n += gridDim.x) {
      const std::int64_t col = tile_n * BLOCK + threadIdx.x;
      if (row < m && col < n) {
        // All offsets in 64 bits: row * k and p * n exceed 2^31 on large matrices.
        const T* a_row = a + row * k;
        T acc = 0;
        for (std::int64_t p = 0; p < k; ++p) acc += a_row[p] * b[p * n + col];
        c[row * n + col] = acc;
      }
    }
  }
}

template <int BLOCK>
void run_naive(const GpuGemm& g, GpuContext&) {
  static_assert(BLOCK == 16 || BLOCK == 32, "naive kernel: BLOCK is 16 or 32");
  static_assert(BLOCK * BLOCK <= 1024, "naive kernel: at most 1024 threads per block");
  launch_plain(g, tile_grid(g.m, g.n, BLOCK, BLOCK), dim3(BLOCK, BLOCK), &naive_gemm_kernel<float, BLOCK>,
               &naive_gemm_kernel<double, BLOCK>);
}

}  // namespace

std::vector<GpuKernel> naive_kernels() {
  return {
      {"naive", "one thread per element of C, 32x32 blocks, operands from global memory", nullptr, &run_naive<32>},
      {"naive16", "one thread per element of C, 16x16 blocks, operands from global memory", nullptr, &run_naive<16>},
  };
}

}  // namespace tessera::kernels
