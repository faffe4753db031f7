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
//
// The copies (2026-12-02, as in dmma.cu): pointers that advance a k block at a time, fixed
// shared-memory offsets, no checks on interior tiles, and the next k block's copies issued after
// the first k step (cp_async_pipeline_overlapped): 2214 instructions per k block of 128x256
// instead of 2319 (2048 FFMA in each). H200, % of cuBLAS SGEMM at 4096 / 8192 / 16384:
// warptile-128x256 91.5 / 93.5 / 91.1 (was ~88-89), warptile-128x128 88.6 / 90.4 / 87.2 (was
// 83-85). ncu at 4096 (128x256): FMA pipe 72.7% of its peak, issue slots 78%; per issued
// instruction 0.87 warps were eligible but not selected and 0.25 stalled in dispatch (register
// bank conflicts), so what is left is SASS register allocation. BK 32, 4 stages, a partly
// unrolled k loop and BK 32 in 128x128 were measured beside it and were no better
// (docs/performance-log.md).
//
// Those stalls came from the FFMA order: ptxas had made the row-by-row outer product into groups
// of 8 FFMAs sharing one B value, and each group's first FFMA read three registers with none in
// the operand reuse cache. outer_product now goes row by row with every other row reversed (a
// serpentine: the last B value of a row is the first of the next), and warptile-128x256-16x8 gives
// each thread 16 x 8 of C in 128 x 32 warp tiles with double-buffered fragments. H200, % of
// SGEMM at 4096 / 8192 / 16384: warptile-128x256-16x8 97.8 / 100.7 / 98.0, warptile-128x256
// 93.2 / 95.1 / 92.9, warptile-128x128 91.1 / 93.1 / 89.3 (an experiment harness of four orders
// and seven tilings first: docs/performance-log.md, 2026-12-02 04:07).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_kernel.hpp"
#include "kernels/warptile.cuh"

namespace tessera::kernels {
namespace {

// The kernel, its launchers and the tile configurations (kernels/warptile.cuh).
using warptile::F32_128x128, warptile::F32_128x64, warptile::F32_64x64, warptile::F32_128x256, warptile::F32_128x256_db,
    warptile::F32_128x256_16x8, warptile::F32_128x128_8x16, warptile::F64_64x64, warptile::F64_64x32,
    warptile::F64_32x32;
using warptile::launch_sum_splits;
using warptile::launch_warptile;

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
    launch_sum_splits<T>(count, SPLITS, partials, g.c, g.accumulate, g.stream);
  }
}

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
      {"warptile-128x256-16x8",
       "warptile-128x256 with 16x8 per thread in 128x32 warp tiles, fragments double-buffered (f64: 64x64, 4x8)",
       nullptr, &run_warptile<F32_128x256_16x8, F64_64x64>},
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
