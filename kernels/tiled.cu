// Tiled GEMM with shared memory: the classic first optimisation over the naive kernel. A block
// of TILE x TILE threads computes a TILE x TILE tile of C in ceil(K / TILE) phases; in each
// phase the block loads one TILE x TILE tile of A and one of B into shared memory (each thread
// loads one element of each), then every thread takes its TILE multiply-adds from shared
// memory. Each element of A and B is thus read from global memory K / TILE times fewer than in
// the naive kernel, and those reads are coalesced.
//
// Edges: loads outside A or B write 0 into the tile (adding zeros leaves the sum unchanged),
// and only threads inside C store, so any M, N, K >= 1 works, with no padding of the inputs.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {
namespace {

template <class T, int TILE>
__global__ void __launch_bounds__(TILE* TILE)
    tiled_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* __restrict__ a, const T* __restrict__ b,
                      T* __restrict__ c) {
  __shared__ T As[TILE][TILE];
  __shared__ T Bs[TILE][TILE];
  const int tx = threadIdx.x;  // column within the tile
  const int ty = threadIdx.y;  // row within the tile
  const std::int64_t tiles_m = ceil_div(m, TILE);
  const std::int64_t tiles_n = ceil_div(n, TILE);
  const std::int64_t phases = ceil_div(k, TILE);

  // The grid is capped at the hardware limits (gridDim.y <= 65535), so when M or N is huge a
  // block strides over several tiles of C. The loop bounds depend only on the block, so every
  // thread of a block reaches the same __syncthreads().
  for (std::int64_t tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
    const std::int64_t row = tile_m * TILE + ty;
    for (std::int64_t tile_n = blockIdx.x; tile_n < tiles_n; tile_n += gridDim.x) {
      const std::int64_t col = tile_n * TILE + tx;
      T acc = 0;
      for (std::int64_t phase = 0; phase < phases; ++phase) {
        // All global offsets in 64 bits: row * k and b_row * n exceed 2^31 on large matrices.
        const std::int64_t a_col = phase * TILE + tx;
        const std::int64_t b_row = phase * TILE + ty;
        As[ty][tx] = (row < m && a_col < k) ? a[row * k + a_col] : T(0);
        Bs[ty][tx] = (b_row < k && col < n) ? b[b_row * n + col] : T(0);
        // The whole tile must be in shared memory before anyone reads it.
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc += As[ty][i] * Bs[i][tx];
        // So faster threads don't overwrite As/Bs with the next phase's tiles while slower
        // ones are still reading this phase's.
        __syncthreads();
      }
      if (row < m && col < n) c[row * n + col] = acc;
    }
  }
}

template <int TILE>
void run_tiled(const GpuGemm& g, GpuContext&) {
  static_assert(TILE == 16 || TILE == 32, "tiled kernel: TILE is 16 or 32");
  static_assert(TILE * TILE <= 1024, "tiled kernel: one thread per tile element, <= 1024");
  static_assert(2 * TILE * TILE * sizeof(double) <= 48 * 1024,
                "tiled kernel: the A and B tiles fit in 48 KiB of static shared memory");
  launch_plain(g, tile_grid(g.m, g.n, TILE, TILE), dim3(TILE, TILE), &tiled_gemm_kernel<float, TILE>,
               &tiled_gemm_kernel<double, TILE>);
}

}  // namespace

std::vector<GpuKernel> tiled_kernels() {
  return {
      {"tiled16", "shared-memory tiles of 16x16, one element of C per thread", nullptr, &run_tiled<16>},
      {"tiled32", "shared-memory tiles of 32x32, one element of C per thread", nullptr, &run_tiled<32>},
  };
}

}  // namespace tessera::kernels
