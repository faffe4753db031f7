// 2-D register blocking, the step after tiled.cu. The tiled kernel does one multiply-add per two
// shared-memory loads (As[ty][i], Bs[i][tx]): shared-memory bandwidth, not arithmetic, limits
// it (measured 8 TFLOP/s on the H200, 16% of cuBLAS). Here a block of 256 threads computes a
// BM x BN tile of C (128 x 128 in float) and each thread a TM x TN micro-tile (8 x 8) held in
// registers: per k step a thread loads TM + TN = 16 values from shared memory and does
// TM * TN = 64 multiply-adds with them, 8 times the reuse of the tiled kernel. Each element of A
// and B is also read from global memory BN (resp. BM) / 32 times less often than with 32 x 32 tiles.
//
// A is stored transposed in shared memory (As[p][i] = A(i, p)) so that a thread's TM values of
// one k step are consecutive. Loads are still scalar and the micro-tiles of neighbouring threads
// are TN apart, so the B reads have 4-way bank conflicts: vectorized.cu removes both.
//
// Prediction: limited by the LDS issue rate and conflicts, ~3-4x tiled32 (25-35 TFLOP/s f32,
// ~50-65% of cuBLAS); float64 64 x 64 tiles with 4 x 4 micro-tiles, ~15-20 TFLOP/s.
//
// Edges: loads outside A or B write 0 into the tile, stores are guarded: any M, N, K >= 1.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

template <class T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    regtile_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* __restrict__ a,
                        const T* __restrict__ b, T* __restrict__ c) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  __shared__ T As[BK][BM];  // transposed: As[p][i] = A(row0 + i, k0 + p)
  __shared__ T Bs[BK][BN];
  const int tid = static_cast<int>(threadIdx.x);
  const int trow = tid / (BN / TN);  // which TM rows of the tile this thread computes
  const int tcol = tid % (BN / TN);  // which TN columns

  for_each_tile(m, n, BM, BN, [&](std::int64_t tile_m, std::int64_t tile_n) {
    const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;
    T acc[TM][TN] = {};
    for (std::int64_t k0 = 0; k0 < k; k0 += BK) {
      // Consecutive threads take consecutive k of a row of A and consecutive columns of a row
      // of B: coalesced global reads.
      load_a_tile_transposed<BM, BK, kThreads>(As, a, m, k, row0, k0, tid);
      load_b_tile<BK, BN, kThreads>(Bs, b, k, n, k0, col0, tid);
      // The whole tile must be in shared memory before anyone reads it.
      __syncthreads();
#pragma unroll
      for (int p = 0; p < BK; ++p) {
        T ar[TM], br[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) ar[i] = As[p][trow * TM + i];
#pragma unroll
        for (int j = 0; j < TN; ++j) br[j] = Bs[p][tcol * TN + j];
        outer_product(acc, ar, br);
      }
      // So faster threads don't overwrite the tiles with the next k block while slower ones
      // are still reading this one.
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const std::int64_t r = row0 + trow * TM + i;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const std::int64_t col = col0 + tcol * TN + j;
        if (r < m && col < n) c[r * n + col] = acc[i][j];
      }
    }
  });
}

template <class T, int BM, int BN, int BK, int TM, int TN>
void launch_regtile(const GpuGemm& g) {
  static_assert(BM % TM == 0 && BN % TN == 0, "regtile: the micro-tile divides the block tile");
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "regtile: whole warps, <= 1024 threads");
  static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0,
                "regtile: every thread loads the same number of tile elements");
  static_assert((BM + BN) * BK * sizeof(T) <= 48 * 1024, "regtile: tiles fit static shared memory");
  regtile_gemm_kernel<T, BM, BN, BK, TM, TN><<<tile_grid(g.m, g.n, BM, BN), kThreads, 0, g.stream>>>(
      g.m, g.n, g.k, static_cast<const T*>(g.a), static_cast<const T*>(g.b), static_cast<T*>(g.c));
  CUDA_CHECK_LAUNCH();
}

void run_regtile(const GpuGemm& g, GpuContext&) {
  if (g.dtype == DType::f32)
    launch_regtile<float, 128, 128, 8, 8, 8>(g);
  else
    launch_regtile<double, 64, 64, 8, 4, 4>(g);  // half the registers per double
}

}  // namespace

std::vector<GpuKernel> regtile_kernels() {
  return {{"regtile", "register blocking: 8x8 of C per thread, 128x128x8 block tiles (f64: 4x4, 64x64x8)", nullptr,
           &run_regtile}};
}

}  // namespace tessera::kernels
