// Warp tiling and a multi-stage cp.async pipeline, on top of vectorized.cu.
//
// 1. Pipelining: vectorized.cu loads a k block, waits for it, computes, and only then loads the
//    next: the loads' latency (~600 cycles from DRAM) is exposed once per k block. Here the
//    block keeps STAGES k blocks in shared memory and copies them with cp.async (sm_80+), which
//    moves global memory straight to shared memory without a round trip through registers and
//    without blocking the thread: while the warps compute on block kt, the copies of blocks
//    kt+1 .. kt+STAGES-1 are in flight. One __syncthreads() per k block (not two).
// 2. Warp tiling: the block tile is split into warp tiles (WM x WN) and each warp's 32 threads
//    cover their warp tile in (4 x 4)-element pieces, MSUB x NSUB of them per thread. The
//    threads of a warp then read a small, contiguous set of 16-byte words of the A and B tiles
//    (128 and 64 bytes in the 128x128 float configuration): LDS.128 with broadcast and no bank
//    conflicts, and a warp's working set stays small for the L1/shared-memory crossbar.
// 3. The A tile is transposed on the way into shared memory with 4-byte (8 for double)
//    cp.async copies, mapped so that a warp covers 4 rows x 8 consecutive k: 32-byte runs in
//    global memory and, with 16 bytes of padding per row of the transposed tile, 32 different
//    banks on the shared-memory side. B rows are copied 16 bytes at a time when they are
//    16-byte aligned (N a multiple of 4 floats / 2 doubles, aligned base), else element-wise.
//
// Edges: cp.async with a source size of 0 writes zeros, so edge tiles are zero-padded in
// shared memory; stores to C are guarded. Any M, N, K >= 1.
//
// Accumulation (GpuGemm::accumulate, C += A * B, beta = 1) is a template flag chosen at launch:
// the epilogue reads C where it writes it and adds: one read of C more than C = A * B, instead
// of the dispatcher's scratch C and its add kernel (a second launch that writes, then reads the
// scratch and reads C again). Without the flag the epilogue never reads C. Each element of C
// belongs to one thread of one block, so the read-add-write needs no synchronisation.
//
// Prediction (float, 128x128x16, 8x8 per thread, 3 stages, 256 threads, 2 blocks/SM): per k
// step a thread issues 4 LDS.128 for 64 FFMA, and the loads are hidden behind two k blocks of
// arithmetic; this is the recipe that reaches 80-95% of cuBLAS SGEMM, so ~42-48 TFLOP/s at
// 8192 on the H200 (cuBLAS 51). Smaller tiles (128x64, 64x64) give more blocks for small or
// thin problems (1024^3 has only 64 tiles of 128x128 for 132 SMs). float64 uses half the tile
// area (64x64, 4x8 per thread); DFMA runs at half the FFMA rate, so at most ~60-65% of cuBLAS
// DGEMM, which uses the FP64 tensor cores (see tensorcore.cu's "dmma" for those).
// Measured (H200): 128x128 reached 81-84% of cuBLAS at 4096-16384 (issue slots, not bandwidth).
//
// Larger thread tiles: 8 x 16 per thread (128 accumulators) makes 6 LDS.128 feed 128 FFMA
// instead of 4 per 64, and a 128x256 block tile halves the cp.async per FFMA: 88-90% of cuBLAS
// at 4096-16384 (ncu at 8192: FMA pipe 69%, issue slots 78% busy, 2 warps per scheduler, no
// eligible warp in 20% of cycles). Variants: the same thread tile in 128x128 blocks of 4 warps
// (two blocks per SM), register fragments double-buffered (FRAG_DB), and K split over
// gridDim.z for problems with few tiles (partial C's in the context's scratch, summed in a fixed
// order by sum_splits: deterministic).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

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

// acc += the stage's BK k steps from shared memory. kFragDb: step p + 1's fragments load while
// p's FFMAs run.
template <class Cfg, class T>
__device__ __forceinline__ void multiply_stage(T (&acc)[Cfg::TM][Cfg::TN], const T* As, const T* Bs, int m_base,
                                               int n_base) {
  if constexpr (Cfg::kFragDb) {
    T ar[2][Cfg::TM], br[2][Cfg::TN];
    load_fragments<Cfg>(As, Bs, 0, m_base, n_base, ar[0], br[0]);
#pragma unroll
    for (int p = 0; p < Cfg::BK; ++p) {
      if (p + 1 < Cfg::BK) load_fragments<Cfg>(As, Bs, p + 1, m_base, n_base, ar[(p + 1) % 2], br[(p + 1) % 2]);
      outer_product(acc, ar[p % 2], br[p % 2]);
    }
  } else {
#pragma unroll
    for (int p = 0; p < Cfg::BK; ++p) {
      T ar[Cfg::TM], br[Cfg::TN];
      load_fragments<Cfg>(As, Bs, p, m_base, n_base, ar, br);
      outer_product(acc, ar, br);
    }
  }
}

template <class Cfg, bool VEC_B, bool ACCUMULATE, bool SPLIT_K>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    warptile_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const typename Cfg::T* __restrict__ a,
                         const typename Cfg::T* __restrict__ b, typename Cfg::T* __restrict__ c, bool vec_c,
                         std::int64_t k_split, std::int64_t c_split_stride) {
  using T = typename Cfg::T;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, W = Cfg::W;
  constexpr int kThreads = Cfg::kThreads, kLdA = Cfg::kLdA, kLdB = Cfg::kLdB;
  constexpr int STAGES = Cfg::STAGES, MSUB = Cfg::MSUB, NSUB = Cfg::NSUB;
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

    // What this thread copies, fixed for the tile (so that the k loop keeps few registers):
    // A rows a_row + j * kARowStep (j < kARows) at k offsets a_k + 8 h (h < BK / 8); B rows
    // b_row + j * kBRowStep (j < kBRows) at columns b_col .. b_col + kBWidth - 1.
    constexpr int kARowStep = kThreads / 8, kARows = BM / kARowStep;
    constexpr int kBWidth = VEC_B ? W : 1;
    constexpr int kBChunksPerRow = BN / kBWidth;
    constexpr int kBRowStep = kThreads / kBChunksPerRow, kBRows = BK / kBRowStep;
    static_assert(BM % kARowStep == 0, "warptile: A rows are split evenly over the threads");
    static_assert(kThreads % kBChunksPerRow == 0 && BK % kBRowStep == 0,
                  "warptile: B rows are split evenly over the threads");
    const int a_row = tid / 8, a_k = tid % 8;
    const int b_row = tid / kBChunksPerRow, b_col = (tid % kBChunksPerRow) * kBWidth;
    // n % W == 0 on the vector path: a chunk is all inside or all outside B.
    bool a_row_ok[kARows], b_col_ok;
    const T *a_src, *b_src;
    tile_copy_origin<kARows, kARowStep>(a_row_ok, b_col_ok, a_src, b_src, a, b, m, n, k, row0, col0, a_row, a_k, b_row,
                                        b_col);

    // Issues the copies of k block kb into stage `stage` (zeros outside A and B).
    auto load_stage = [&](int stage, std::int64_t kb) {
      T* const As = smem + stage * Cfg::kStageElems;
      T* const Bs = As + BK * kLdA;
      const std::int64_t k0 = k_lo + kb * BK;
#pragma unroll
      for (int h = 0; h < BK / 8; ++h) {
        const bool k_ok = k0 + a_k + 8 * h < k_hi;
#pragma unroll
        for (int j = 0; j < kARows; ++j) {
          const bool ok = k_ok && a_row_ok[j];
          const T* src = a_src + std::int64_t{j * kARowStep} * k + k0 + 8 * h;
          cp_async<sizeof(T)>(&As[(a_k + 8 * h) * kLdA + a_row + j * kARowStep], ok ? src : a, ok);
        }
      }
#pragma unroll
      for (int j = 0; j < kBRows; ++j) {
        const std::int64_t q = k0 + b_row + j * kBRowStep;
        const bool ok = b_col_ok && q < k_hi;
        const T* src = b_src + (k0 + j * kBRowStep) * n;
        cp_async<kBWidth * sizeof(T)>(&Bs[(b_row + j * kBRowStep) * kLdB + b_col], ok ? src : b, ok);
      }
    };

    T acc[Cfg::TM][Cfg::TN] = {};
    cp_async_pipeline<STAGES>(k_blocks, load_stage, [&](int stage) {
      const T* const As = smem + stage * Cfg::kStageElems;
      multiply_stage<Cfg>(acc, As, As + BK * kLdA, m_base, n_base);
    });

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

template <class T, bool ACCUMULATE>
__global__ void sum_splits(std::int64_t count, int splits, const T* __restrict__ partial, T* __restrict__ c) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    T sum = ACCUMULATE ? c[i] : T(0);
    for (int z = 0; z < splits; ++z) sum += partial[z * count + i];  // a fixed order: deterministic
    c[i] = sum;
  }
}

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

// SPLITS > 1: split K over gridDim.z (more blocks for problems with few tiles of C: 1024^3 has
// 64 tiles of 128x128 for 132 SMs); each split writes a partial C into the context's scratch and
// sum_splits adds them in a fixed order (deterministic, unlike atomic adds), into C or onto it.
template <class Cfg, int SPLITS>
void launch_warptile(const GpuGemm& g, GpuContext& ctx) {
  using T = typename Cfg::T;
  constexpr int W = Cfg::W;
  static_assert(SPLITS >= 1, "warptile: at least one split of K");
  // 16-byte copies of B need 16-byte-aligned rows: an aligned base, a row length in whole chunks.
  const bool vec_b = g.n % W == 0 && is_aligned(g.b, 16);
  if constexpr (SPLITS == 1) {
    const bool vec_c = g.n % W == 0 && is_aligned(g.c, 16);
    static_switch([&](auto vec_b_,
                      auto accumulate) { launch_warptile<Cfg, vec_b_(), accumulate(), false>(g, vec_c, 1, nullptr); },
                  vec_b, g.accumulate);
  } else {
    const std::int64_t count = g.m * g.n;
    void* const partials = ctx.scratch(static_cast<std::size_t>(SPLITS * count) * sizeof(T));  // 256-byte aligned
    static_switch([&](auto vec_b_) { launch_warptile<Cfg, vec_b_(), false, true>(g, g.n % W == 0, SPLITS, partials); },
                  vec_b);
    constexpr int kThreads = 256;
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(count, kThreads), 65535));
    static_switch(
        [&](auto accumulate) {
          sum_splits<T, accumulate()>
              <<<blocks, kThreads, 0, g.stream>>>(count, SPLITS, static_cast<const T*>(partials), static_cast<T*>(g.c));
        },
        g.accumulate);
    CUDA_CHECK_LAUNCH();
  }
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
using F64_64x64 = WarpTileConfig<double, 64, 64, 16, 32, 32, 1, 2, 3, 3>;          // 128 thr
using F64_64x32 = WarpTileConfig<double, 64, 32, 16, 32, 16, 1, 1, 3, 4>;          // 128 thr
using F64_32x32 = WarpTileConfig<double, 32, 32, 16, 32, 16, 1, 1, 3, 6>;          //  64 thr

template <class F32, class F64, int SPLITS = 1>
void run_warptile(const GpuGemm& g, GpuContext& ctx) {
  if (g.dtype == DType::f32)
    launch_warptile<F32, SPLITS>(g, ctx);
  else
    launch_warptile<F64, SPLITS>(g, ctx);
}

}  // namespace

std::vector<GpuKernel> warptile_kernels() {
  std::vector<GpuKernel> kernels{
      {"warptile-128x128", "warp tiles + 3-stage cp.async pipeline, 128x128x16 tiles, 8x8 per thread (f64: 64x64, 4x8)",
       nullptr, &run_warptile<F32_128x128, F64_64x64>},
      {"warptile-128x64", "warp tiles + 3-stage cp.async pipeline, 128x64x16 tiles, 8x8 per thread (f64: 64x32, 4x4)",
       nullptr, &run_warptile<F32_128x64, F64_64x32>},
      {"warptile-64x64", "warp tiles + 3-stage cp.async pipeline, 64x64x16 tiles, 4x8 per thread (f64: 32x32, 4x4)",
       nullptr, &run_warptile<F32_64x64, F64_32x32>},
      {"warptile-128x256",
       "warp tiles + 3-stage cp.async pipeline, 128x256x16 tiles, 8x16 per thread (f64: 64x64, 4x8)", nullptr,
       &run_warptile<F32_128x256, F64_64x64>},
      {"warptile-128x256-db", "warptile-128x256 with double-buffered register fragments (f64: 64x64, 4x8)", nullptr,
       &run_warptile<F32_128x256_db, F64_64x64>},
      {"warptile-128x128-8x16",
       "warp tiles + 3-stage cp.async pipeline, 128x128x16 tiles of 4 warps, 8x16 per thread, 2 blocks/SM "
       "(f64: 64x64, 4x8)",
       nullptr, &run_warptile<F32_128x128_8x16, F64_64x64>},
      {"warptile-128x256-split2",
       "warptile-128x256 with K split in 2 (partial C's summed in a fixed order; f64: 64x64)", nullptr,
       &run_warptile<F32_128x256, F64_64x64, 2>},
      {"warptile-128x128-8x16-split4",
       "warptile-128x128-8x16 with K split in 4, for problems with few tiles (f64: 64x64)", nullptr,
       &run_warptile<F32_128x128_8x16, F64_64x64, 4>},
  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;  // C += A * B in the epilogue
  return kernels;
}

}  // namespace tessera::kernels
