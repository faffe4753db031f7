// Vectorised loads and a conflict-free shared-memory layout, on top of regtile.cu.
//
// 1. Global -> registers in 16 bytes (LDG.E.128: a float4 or double2) when the rows of the
//    operand start on 16-byte boundaries (base pointer aligned and the row length a multiple
//    of 4 floats / 2 doubles); otherwise, and for any chunk that crosses the edge of A or B, a
//    guarded scalar path. A quarter of the load instructions and address arithmetic.
// 2. The A tile is transposed on its way to shared memory (As[p][i]) and padded by 16 bytes per
//    row, so the four scalar stores of a float4 from a warp hit 32 different banks.
// 3. A thread's TM x TN micro-tile is (TM/4) x (TN/4) blocks of 4 x 4, the blocks a warp's width
//    apart, so the fragment reads are 16-byte LDS.128 and the threads of a warp read consecutive
//    16-byte words: no bank conflicts (regtile's B reads had four-way conflicts).
// 4. C is written with 16-byte stores where rows are aligned.
//
// Prediction: half regtile's shared-memory instructions and no conflicts: ~1.3-1.6x regtile,
// 60-75% of cuBLAS in float. Still one tile in flight: the loads of the next k block wait for
// the arithmetic of this one (warptile.cu overlaps them).
//
// Edges: any M, N, K >= 1 (zero-filled tile elements outside A and B, guarded stores).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

template <class T, int BM, int BN, int BK, int TM, int TN, bool VEC_A, bool VEC_B>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    vectorized_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* __restrict__ a,
                           const T* __restrict__ b, T* __restrict__ c, bool vec_c) {
  using V = typename Vec<T>::type;
  constexpr int W = Vec<T>::kWidth;  // elements per 16 bytes
  constexpr int kThreads = (BM / TM) * (BN / TN);
  constexpr int kRowThreads = BM / TM, kColThreads = BN / TN;
  constexpr int kPadA = W;                        // 16 bytes: rows stay 16-byte aligned
  __shared__ __align__(16) T As[BK][BM + kPadA];  // transposed: As[p][i] = A(row0 + i, k0 + p)
  __shared__ __align__(16) T Bs[BK][BN];
  const int tid = static_cast<int>(threadIdx.x);
  const int trow = tid / kColThreads, tcol = tid % kColThreads;

  for_each_tile(m, n, BM, BN, [&](std::int64_t tile_m, std::int64_t tile_n) {
    const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;
    T acc[TM][TN] = {};
    // Vector path: this thread's chunks are A row a_i at k offset a_p (+ k0), and B row b_p
    // (+ k0) at column b_j, kAChunks / kBChunks of them kARowStep / kBRowStep rows apart. Source
    // pointers are set up once per tile (64-bit offsets). The scalar path (rows not 16-byte
    // aligned) copies single elements, consecutive threads taking consecutive elements.
    constexpr int kAChunks = BM * BK / W / kThreads, kBChunks = BK * BN / W / kThreads;
    constexpr int kARowStep = kThreads / (BK / W), kBRowStep = kThreads / (BN / W);
    const int a_i = tid / (BK / W), a_p = (tid % (BK / W)) * W;
    const int b_p = tid / (BN / W), b_j = (tid % (BN / W)) * W;
    const T* const a_src = a + (row0 + a_i) * k + a_p;
    const T* const b_src = b + std::int64_t{b_p} * n + col0 + b_j;
    for (std::int64_t k0 = 0; k0 < k; k0 += BK) {
      if constexpr (VEC_A) {
        // k % W == 0 and aligned rows: a chunk is entirely inside or entirely outside K, so one
        // bounds check covers all of it. Transposed into As with W scalar stores.
#pragma unroll
        for (int it = 0; it < kAChunks; ++it) {
          const int i = a_i + it * kARowStep;
          V v{};
          if (row0 + i < m && k0 + a_p < k)
            v = *reinterpret_cast<const V*>(a_src + std::int64_t{it * kARowStep} * k + k0);
#pragma unroll
          for (int w = 0; w < W; ++w) As[a_p + w][i] = vec_get(v, w);
        }
      } else {
        load_a_tile_transposed<BM, BK, kThreads>(As, a, m, k, row0, k0, tid);
      }
      if constexpr (VEC_B) {
        // n % W == 0 and aligned rows: a chunk is all inside or all outside N.
#pragma unroll
        for (int it = 0; it < kBChunks; ++it) {
          const int p = b_p + it * kBRowStep;
          V v{};
          if (k0 + p < k && col0 + b_j < n) v = *reinterpret_cast<const V*>(b_src + (k0 + it * kBRowStep) * n);
          *reinterpret_cast<V*>(&Bs[p][b_j]) = v;
        }
      } else {
        load_b_tile<BK, BN, kThreads>(Bs, b, k, n, k0, col0, tid);
      }
      // The whole tile must be in shared memory before anyone reads it.
      __syncthreads();
#pragma unroll
      for (int p = 0; p < BK; ++p) {
        T ar[TM], br[TN];
#pragma unroll
        for (int s = 0; s < TM / 4; ++s) load4(&As[p][s * 4 * kRowThreads + trow * 4], &ar[s * 4]);
#pragma unroll
        for (int s = 0; s < TN / 4; ++s) load4(&Bs[p][s * 4 * kColThreads + tcol * 4], &br[s * 4]);
        outer_product(acc, ar, br);
      }
      // So faster threads don't overwrite the tiles with the next k block while slower ones
      // are still reading this one.
      __syncthreads();
    }
#pragma unroll
    for (int si = 0; si < TM / 4; ++si)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int64_t r = row0 + si * 4 * kRowThreads + trow * 4 + i;
        if (r >= m) continue;
#pragma unroll
        for (int sj = 0; sj < TN / 4; ++sj) {
          const std::int64_t col = col0 + sj * 4 * kColThreads + tcol * 4;
          store4_guarded(c + r * n, col, n, &acc[si * 4 + i][sj * 4], vec_c);
        }
      }
  });
}

template <class T, int BM, int BN, int BK, int TM, int TN>
void launch_vectorized(const GpuGemm& g) {
  constexpr int W = Vec<T>::kWidth;
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(TM % 4 == 0 && TN % 4 == 0, "vectorized: micro-tiles are blocks of 4 x 4");
  static_assert(BM % TM == 0 && BN % TN == 0, "vectorized: the micro-tile divides the block tile");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "vectorized: whole warps, <= 1024 threads");
  static_assert(BK % W == 0 && BN % W == 0, "vectorized: tiles are whole 16-byte chunks");
  static_assert((BM * BK / W) % kThreads == 0 && (BK * BN / W) % kThreads == 0,
                "vectorized: every thread loads the same number of chunks (and of elements)");
  static_assert(kThreads % (BK / W) == 0 && kThreads % (BN / W) == 0,
                "vectorized: a thread's chunks are whole rows apart");
  static_assert((BK * (BM + W) + BK * BN) * sizeof(T) <= 48 * 1024, "vectorized: tiles fit static shared memory");
  // 16-byte accesses need 16-byte-aligned rows: an aligned base and a row length in whole chunks.
  const bool vec_a = g.k % W == 0 && is_aligned(g.a, 16);
  const bool vec_b = g.n % W == 0 && is_aligned(g.b, 16);
  const bool vec_c = g.n % W == 0 && is_aligned(g.c, 16);
  const dim3 grid = tile_grid(g.m, g.n, BM, BN);
  const auto* a = static_cast<const T*>(g.a);
  const auto* b = static_cast<const T*>(g.b);
  auto* c = static_cast<T*>(g.c);
  if (vec_a && vec_b)
    vectorized_gemm_kernel<T, BM, BN, BK, TM, TN, true, true>
        <<<grid, kThreads, 0, g.stream>>>(g.m, g.n, g.k, a, b, c, vec_c);
  else if (vec_a)
    vectorized_gemm_kernel<T, BM, BN, BK, TM, TN, true, false>
        <<<grid, kThreads, 0, g.stream>>>(g.m, g.n, g.k, a, b, c, vec_c);
  else if (vec_b)
    vectorized_gemm_kernel<T, BM, BN, BK, TM, TN, false, true>
        <<<grid, kThreads, 0, g.stream>>>(g.m, g.n, g.k, a, b, c, vec_c);
  else
    vectorized_gemm_kernel<T, BM, BN, BK, TM, TN, false, false>
        <<<grid, kThreads, 0, g.stream>>>(g.m, g.n, g.k, a, b, c, vec_c);
  CUDA_CHECK_LAUNCH();
}

void run_vectorized(const GpuGemm& g, GpuContext&) {
  if (g.dtype == DType::f32)
    launch_vectorized<float, 128, 128, 8, 8, 8>(g);
  else
    launch_vectorized<double, 64, 64, 8, 4, 4>(g);
}

}  // namespace

std::vector<GpuKernel> vectorized_kernels() {
  return {{"vectorized", "register blocking + 16-byte loads/stores, transposed padded A tile, LDS.128 fragments",
           nullptr, &run_vectorized}};
}

}  // namespace tessera::kernels
