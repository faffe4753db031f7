#pragma once
// The warptile kernel as a template, shared by the files that launch it: kernels/warptile.cu (the
// technique, explained there, and its registered variants) and kernels/warptile_staged.cu (the
// same kernel on 16-byte-aligned staged copies, with the last wave's tiles split along K). The
// kernel, the split-K sum, the launcher with a run-time split count, and the tile configurations.
// Internal to kernels/.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels::warptile {

// A tile configuration: block tile BM x BN x BK, warp tile WM x WN, each thread MSUB x NSUB
// pieces of 4 x 4, STAGES k blocks in shared memory, MIN_BLOCKS blocks per SM to plan
// registers for (__launch_bounds__); FRAG_DB: the fragments of k step p + 1 are loaded from
// shared memory into a second set of registers while the FFMAs of step p run.
template <class T_, int BM_, int BN_, int BK_, int WM_, int WN_, int MSUB_, int NSUB_, int STAGES_, int MIN_BLOCKS_,
          bool FRAG_DB_ = false>
struct WarpTileConfig {
  using T = T_;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int MSUB = MSUB_, NSUB = NSUB_, STAGES = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr bool kFragDb = FRAG_DB_;
  static constexpr int TM = 4 * MSUB, TN = 4 * NSUB;  // C elements per thread: TM x TN
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kLaneRows = WM / TM, kLaneCols = WN / TN;  // a warp's threads: rows x cols
  static constexpr int W = Vec<T>::kWidth;                        // elements per 16 bytes
  static constexpr int kLdA = BM + W;                             // transposed A tile, padded by 16 bytes per row
  static constexpr int kLdB = BN;
  static constexpr int kStageElems = BK * kLdA + BK * kLdB;
  static constexpr std::size_t kSmemBytes = std::size_t{STAGES} * kStageElems * sizeof(T);

  static_assert(BM % WM == 0 && BN % WN == 0, "warptile: warp tiles divide the block tile");
  static_assert(WM % TM == 0 && WN % TN == 0, "warptile: thread pieces divide the warp tile");
  static_assert(kLaneRows * kLaneCols == 32, "warptile: a warp tile is covered by 32 threads");
  static_assert(kThreads <= 1024, "warptile: at most 1024 threads per block");
  static_assert(BK % 8 == 0 && BM % 4 == 0, "warptile: A is copied 4 rows x 8 k per warp");
  static_assert(kThreads % 8 == 0 && BN % W == 0, "warptile: whole copies of A and B");
  static_assert(STAGES >= 2, "warptile: at least double buffering");
  static_assert((kLdA * sizeof(T)) % 16 == 0 && (BK * kLdA * sizeof(T)) % 16 == 0 &&
                    (kStageElems * sizeof(T)) % 16 == 0,
                "warptile: rows and stages start on 16-byte boundaries (LDS.128, 16-byte cp.async)");
  static_assert(kSmemBytes <= 227 * 1024, "warptile: the stages fit an SM's shared memory");
};

// Four consecutive elements of a row of C from registers: C = v, or C += v when ACCUMULATE.
// Same guards as store4_guarded: 16-byte accesses when `vec` and all four are inside C, else
// element-wise ones of the elements inside C.
template <bool ACCUMULATE, class T>
__device__ __forceinline__ void epilogue4(T* c_row, std::int64_t col, std::int64_t n, const T* v, bool vec) {
  if constexpr (!ACCUMULATE) {
    store4_guarded(c_row, col, n, v, vec);
  } else if (vec && col + 3 < n) {
    T sum[4];
    load4(c_row + col, sum);
#pragma unroll
    for (int j = 0; j < 4; ++j) sum[j] += v[j];
    store4(c_row + col, sum);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (col + j < n) c_row[col + j] += v[j];
  }
}

// This thread's fragments of k step p of a stage (A tile As, B tile Bs): MSUB 4-element pieces of
// A's column p and NSUB of B's row p, each one LDS.128 (two for double).
template <class Cfg, class T>
__device__ __forceinline__ void load_fragments(const T* As, const T* Bs, int p, int m_base, int n_base, T* ar, T* br) {
#pragma unroll
  for (int s = 0; s < Cfg::MSUB; ++s) load4(&As[p * Cfg::kLdA + m_base + s * (Cfg::WM / Cfg::MSUB)], &ar[4 * s]);
#pragma unroll
  for (int t = 0; t < Cfg::NSUB; ++t) load4(&Bs[p * Cfg::kLdB + n_base + t * (Cfg::WN / Cfg::NSUB)], &br[4 * t]);
}

// acc += the stage's BK k steps from shared memory, calling issue() (the next k block's copies,
// cp_async_pipeline_overlapped) after the first. kFragDb: step p + 1's fragments load while p's
// FFMAs run.
template <class Cfg, class T, class Issue>
__device__ __forceinline__ void multiply_stage(T (&acc)[Cfg::TM][Cfg::TN], const T* As, const T* Bs, int m_base,
                                               int n_base, Issue&& issue) {
  if constexpr (Cfg::kFragDb) {
    T ar[2][Cfg::TM], br[2][Cfg::TN];
    load_fragments<Cfg>(As, Bs, 0, m_base, n_base, ar[0], br[0]);
#pragma unroll
    for (int p = 0; p < Cfg::BK; ++p) {
      if (p + 1 < Cfg::BK) load_fragments<Cfg>(As, Bs, p + 1, m_base, n_base, ar[(p + 1) % 2], br[(p + 1) % 2]);
      outer_product(acc, ar[p % 2], br[p % 2]);
      if (p == 0) issue();
    }
  } else {
#pragma unroll
    for (int p = 0; p < Cfg::BK; ++p) {
      T ar[Cfg::TM], br[Cfg::TN];
      load_fragments<Cfg>(As, Bs, p, m_base, n_base, ar, br);
      outer_product(acc, ar, br);
      if (p == 0) issue();
    }
  }
}

// acc += A(rows of tile_m) B(columns of tile_n) over k blocks [0, k_blocks) from k_lo (k < k_hi):
// the tile's copies and the pipeline. Each thread copies A rows a_row + j kARowStep at k offsets
// a_k + 8 h (4 bytes each: A is transposed on its way into shared memory) and B rows b_row +
// j kBRowStep at columns b_col .. b_col + kBWidth - 1; its source pointers advance a k block at a
// time and its destinations are fixed offsets, so a copy costs a 64-bit add and the cp.async.
// GUARDED: the tile crosses C's edge or its last k block is partial; rows, columns and k beyond
// the matrices are zero-filled. Otherwise no checks (as in dmma.cu).
template <class Cfg, bool VEC_B, bool GUARDED, class T>
__device__ __forceinline__ void tile_product(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
                                             std::int64_t row0, std::int64_t col0, std::int64_t k_lo, std::int64_t k_hi,
                                             std::int64_t k_blocks, T* smem, int m_base, int n_base,
                                             T (&acc)[Cfg::TM][Cfg::TN]) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, W = Cfg::W;
  constexpr int kThreads = Cfg::kThreads, kLdA = Cfg::kLdA, kLdB = Cfg::kLdB;
  const int tid = static_cast<int>(threadIdx.x);
  constexpr int kARowStep = kThreads / 8, kARows = BM / kARowStep;
  constexpr int kBWidth = VEC_B ? W : 1;
  constexpr int kBChunksPerRow = BN / kBWidth;
  constexpr int kBRowStep = kThreads / kBChunksPerRow, kBRows = BK / kBRowStep;
  static_assert(BM % kARowStep == 0, "warptile: A rows are split evenly over the threads");
  static_assert(kThreads % kBChunksPerRow == 0 && BK % kBRowStep == 0,
                "warptile: B rows are split evenly over the threads");
  const int a_row = tid / 8, a_k = tid % 8;
  const int b_row = tid / kBChunksPerRow, b_col = (tid % kBChunksPerRow) * kBWidth;

  const auto smem_base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned a_dst = (a_k * kLdA + a_row) * sizeof(T);
  const unsigned b_dst = (BK * kLdA + b_row * kLdB + b_col) * sizeof(T);
  // The sources (kernels/tile_copy.cuh); n % W == 0 on the vector path, so a B chunk is all
  // inside B or all outside.
  CopyCursor<T, BM, BK, kARowStep, kBRowStep, GUARDED> src(a, b, m, n, k, row0, col0, k_lo, k_hi, a_row, a_k, b_row,
                                                           b_col);

  auto load = [&](int stage) {
    const unsigned base = smem_base + stage * static_cast<unsigned>(Cfg::kStageElems * sizeof(T));
    const T* p = src.a_next;
#pragma unroll
    for (int j = 0; j < kARows; ++j, p += src.a_rows_apart)
#pragma unroll
      for (int h = 0; h < BK / 8; ++h)
        copy_chunk<sizeof(T), GUARDED>(base + a_dst + (8 * h * kLdA + j * kARowStep) * sizeof(T), p + 8 * h, a,
                                       src.a_ok(j, 8 * h));
    p = src.b_next;
#pragma unroll
    for (int j = 0; j < kBRows; ++j, p += src.b_rows_apart)
      copy_chunk<kBWidth * sizeof(T), GUARDED>(base + b_dst + j * kBRowStep * kLdB * sizeof(T), p, b, src.b_ok(j));
    src.advance();
  };

  cp_async_pipeline_overlapped<Cfg::STAGES>(k_blocks, load, [&](int stage, auto&& issue) {
    const T* const As = smem + stage * Cfg::kStageElems;
    multiply_stage<Cfg>(acc, As, As + BK * kLdA, m_base, n_base, issue);
  });
}

template <class Cfg, bool VEC_B, bool ACCUMULATE, bool SPLIT_K>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    warptile_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const typename Cfg::T* __restrict__ a,
                         const typename Cfg::T* __restrict__ b, typename Cfg::T* __restrict__ c, bool vec_c,
                         std::int64_t k_split, std::int64_t c_split_stride) {
  using T = typename Cfg::T;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
  constexpr int MSUB = Cfg::MSUB, NSUB = Cfg::NSUB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  // First row and column of this thread's first 4 x 4 piece in the block tile; piece (s, t)
  // is WM / MSUB rows and WN / NSUB columns further.
  const int m_base = (warp / Cfg::kWarpsN) * Cfg::WM + (lane / Cfg::kLaneCols) * 4;
  const int n_base = (warp % Cfg::kWarpsN) * Cfg::WN + (lane % Cfg::kLaneCols) * 4;
  // SPLIT_K: this block sums k in [k_lo, k_hi) (split blockIdx.z) into its own partial C,
  // c_split_stride elements after the previous split's. Without it, all of k into C, and no
  // registers spent on the slice (128x128 tiles run at the 128-register limit).
  const std::int64_t k_lo = SPLIT_K ? blockIdx.z * k_split : 0;
  const std::int64_t k_hi = !SPLIT_K ? k : k_lo + k_split < k ? k_lo + k_split : k;
  const std::int64_t k_blocks = k_hi > k_lo ? ceil_div(k_hi - k_lo, BK) : 0;
  if constexpr (SPLIT_K) c += blockIdx.z * c_split_stride;

  for_each_tile(m, n, BM, BN, [&](std::int64_t tile_m, std::int64_t tile_n) {
    const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;

    T acc[Cfg::TM][Cfg::TN] = {};
    const bool inside = row0 + BM <= m && col0 + BN <= n && k_lo + k_blocks * BK <= k_hi;
    if (inside)
      tile_product<Cfg, VEC_B, false>(m, n, k, a, b, row0, col0, k_lo, k_hi, k_blocks, smem, m_base, n_base, acc);
    else
      tile_product<Cfg, VEC_B, true>(m, n, k, a, b, row0, col0, k_lo, k_hi, k_blocks, smem, m_base, n_base, acc);

#pragma unroll
    for (int s = 0; s < MSUB; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int64_t r = row0 + m_base + s * (Cfg::WM / MSUB) + i;
        if (r >= m) continue;
#pragma unroll
        for (int t = 0; t < NSUB; ++t) {
          const std::int64_t col = col0 + n_base + t * (Cfg::WN / NSUB);
          epilogue4<ACCUMULATE>(c + r * n, col, n, &acc[4 * s + i][4 * t], vec_c);
        }
      }
  });
}

// c[i] = (c[i] +) the partial C's' i-th elements, summed in the order of the splits.
template <class T, bool ACCUMULATE>
__global__ void sum_splits(std::int64_t count, int splits, const T* __restrict__ partial, T* __restrict__ c) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    T sum = ACCUMULATE ? c[i] : T(0);
    for (int z = 0; z < splits; ++z) sum += partial[z * count + i];  // a fixed order: deterministic
    c[i] = sum;
  }
}

// One launch of the kernel on g (any m, n, k >= 1): into g.c (splits == 1; C += A * B when
// ACCUMULATE), or with K split in `splits` over gridDim.z (SPLIT_K) into `splits` partial C's of
// m x n elements one after the other at `partials`, for launch_sum_splits to add. vec_c: 16-byte
// stores to the output (its rows 16-byte aligned); VEC_B: 16-byte copies of B (the same for B).
template <class Cfg, bool VEC_B, bool ACCUMULATE, bool SPLIT_K>
void launch_warptile(const GpuGemm& g, bool vec_c, int splits, void* partials) {
  using T = typename Cfg::T;
  const auto kernel = &warptile_gemm_kernel<Cfg, VEC_B, ACCUMULATE, SPLIT_K>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes);
  dim3 grid = tile_grid(g.m, g.n, Cfg::BM, Cfg::BN);
  grid.z = static_cast<unsigned>(splits);
  // Whole k blocks per split, so that only the last split has a partial one.
  const std::int64_t k_split = ceil_div(ceil_div(g.k, Cfg::BK), splits) * Cfg::BK;
  T* const out = splits > 1 ? static_cast<T*>(partials) : static_cast<T*>(g.c);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, g.stream>>>(g.m, g.n, g.k, static_cast<const T*>(g.a),
                                                             static_cast<const T*>(g.b), out, vec_c, k_split,
                                                             splits > 1 ? g.m * g.n : 0);
  CUDA_CHECK_LAUNCH();
}

// C (count elements) = the sum of `splits` partial C's of count elements each, or C += it with
// `accumulate`: added in a fixed order, so the result is the same at every run.
template <class T>
void launch_sum_splits(std::int64_t count, int splits, const void* partials, void* c, bool accumulate,
                       cudaStream_t stream) {
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(count, kThreads), 65535));
  static_switch(
      [&](auto accumulate_) {
        sum_splits<T, accumulate_()>
            <<<blocks, kThreads, 0, stream>>>(count, splits, static_cast<const T*>(partials), static_cast<T*>(c));
      },
      accumulate);
  CUDA_CHECK_LAUNCH();
}

//                                   T       BM   BN  BK  WM  WN MSUB NSUB STAGES MIN_BLOCKS
using F32_128x128 = WarpTileConfig<float, 128, 128, 16, 64, 32, 2, 2, 3, 2>;  // 256 thr
using F32_128x64 = WarpTileConfig<float, 128, 64, 16, 64, 32, 2, 2, 3, 3>;    // 128 thr
using F32_64x64 = WarpTileConfig<float, 64, 64, 16, 32, 32, 1, 2, 3, 4>;      // 128 thr
// 8 x 16 per thread (128 accumulators): 6 LDS.128 per 128 FFMA instead of 4 per 64, a quarter
// fewer cp.async per FFMA; one block (8 warps) per SM, latency hidden by ILP instead of warps.
using F32_128x256 = WarpTileConfig<float, 128, 256, 16, 64, 64, 2, 4, 3, 1>;           // 256 thr
using F32_128x256_db = WarpTileConfig<float, 128, 256, 16, 64, 64, 2, 4, 3, 1, true>;  // 256 thr
// 8 x 16 per thread in 128 x 128 tiles of 4 warps: two blocks per SM, so one block's barrier
// or load wait is covered by the other's FFMAs, and twice the tiles of 128x256.
using F32_128x128_8x16 = WarpTileConfig<float, 128, 128, 16, 64, 64, 2, 4, 3, 2>;  // 128 thr
// 16 x 8 per thread in warp tiles of 128 x 32 (8 x 4 threads), fragments double-buffered: the same
// 6 LDS.128 per 128 FFMA as 8 x 16; with the serpentine outer_product 95-100% of SGEMM where 8 x 16
// in 64 x 64 warp tiles runs 94-97% (H200, 2026-12-02, kernels/warptile.cu).
using F32_128x256_16x8 = WarpTileConfig<float, 128, 256, 16, 128, 32, 4, 2, 3, 1, true>;  // 256 thr
using F64_64x64 = WarpTileConfig<double, 64, 64, 16, 32, 32, 1, 2, 3, 3>;                 // 128 thr
using F64_64x32 = WarpTileConfig<double, 64, 32, 16, 32, 16, 1, 1, 3, 4>;                 // 128 thr
using F64_32x32 = WarpTileConfig<double, 32, 32, 16, 32, 16, 1, 1, 3, 6>;                 //  64 thr

}  // namespace tessera::kernels::warptile
