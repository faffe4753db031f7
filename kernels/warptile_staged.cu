// The float32 warptile kernels at large shapes whose rows are not 16-byte aligned, and with the
// last partial wave of tiles split along K (issue 30, the 4099 x 4097 x 4095 half).
//
// 1. Staging. warptile.cu copies B to shared memory 16 bytes at a time only where B's rows are
//    16-byte aligned (N a multiple of 4, an aligned base); otherwise each thread issues four times
//    the cp.async, 4 bytes each, in a kernel whose limit is instruction issue (performance-log.md,
//    "4099"). Its C stores are element-wise for the same reason. Where N % 4 != 0 (or B is not
//    aligned) and the problem is large (m n k >= 2^30), B is first copied into a k x n4 buffer
//    (n4 = N rounded up to 4, zero columns beyond N) and the kernel computes an m x n4 C, whose
//    first N columns a last pass copies to C (or adds, for C += A * B). A needs no copy: the
//    kernel reads A with 4-byte copies whatever K is (it transposes A on the way into shared
//    memory), so K % 4 does not change its code. The two passes read and write about (k + m) n4
//    floats each: at 4099 x 4097 x 4095 ~270 MB, an estimated ~0.07 ms at 4 TB/s against ~3 ms
//    of GEMM (the passes were not timed apart); below the threshold the plain path runs.
// 2. Tail split (the "-tail" variants). A GEMM of T tiles on a GPU holding P blocks at once runs in
//    ceil(T / P) waves; at 4099 x 4097 x 4095, 33 x 17 tiles of 128 x 256 on 132 SMs are 4.25
//    waves, the fifth a quarter full but as long as the others. The tile rows that fill whole
//    waves run as usual; the rest run in a second launch with K split so that they fill one wave
//    (kernels/tail_split.hpp), into partial C's in the context's scratch that warptile's
//    sum_splits adds in a fixed order: deterministic, no atomics. The SM count and the kernel's
//    blocks per SM come from the runtime (resident_blocks, cached per device and thread).
//
// Buffers: the staged B and C in the context's operand scratch, the tail's partial C's in its
// scratch (the dispatcher's own use of scratch, for kernels that cannot add into C, never
// happens here: these kernels add into C themselves). Float32 only.
//
// Measured (H200, 2026-12-01, `tessera bench`, % of cuBLAS SGEMM at 4099 x 4097 x 4095): staging
// alone 80.2% (128x128) and 77.0% (128x256-db, since replaced by 128x256-16x8) against 79.1% and 73.5% for the plain
// kernels; with the tail split 86.4% and 86.1%; after warptile's copies were reworked (2026-12-02) 88.0% and 89.8% (the
// plain kernels 84.2% and 75.3%); on the 16 x 8 thread tile with the serpentine FFMA order (warptile-128x256-16x8, same
// day) 95.0%, and 92.0% for 128x128. At aligned sizes these run as the plain kernels.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tail_split.hpp"
#include "kernels/warptile.cuh"

namespace tessera::kernels {
namespace {

using warptile::F32_128x128, warptile::F32_128x256_16x8;
using warptile::launch_sum_splits;
using warptile::launch_warptile;
using warptile::warptile_gemm_kernel;

// Staging is for problems at least this large (m n k; 4099 x 4097 x 4095 is ~2^36), where its
// copies are a few percent of the GEMM's time by the estimate above; at 1024^3 they would not be.
constexpr double kStageMinVolume = 1073741824.0;  // 2^30

// ---- the copies ---------------------------------------------------------------------------------

// dst (rows x ld, ld a multiple of 4, 16-byte aligned) = src (rows x cols, cols <= ld), with zeros
// in columns cols .. ld - 1. Each thread writes 16 bytes of a row of dst (one STG.128) from four
// guarded loads (src's rows need not be aligned); consecutive threads take consecutive 16 bytes,
// so reads and writes are coalesced. Rows over gridDim.y, 16-byte chunks over x (grid-stride).
__global__ void pad_columns(std::int64_t rows, std::int64_t cols, std::int64_t ld, const float* __restrict__ src,
                            float* __restrict__ dst) {
  const std::int64_t chunks = ld / 4;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* const s = src + r * cols;
    auto* const d = reinterpret_cast<float4*>(dst + r * ld);
    for (std::int64_t q = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; q < chunks;
         q += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t c = 4 * q;
      float4 v;
      v.x = c < cols ? s[c] : 0.0f;
      v.y = c + 1 < cols ? s[c + 1] : 0.0f;
      v.z = c + 2 < cols ? s[c + 2] : 0.0f;
      v.w = c + 3 < cols ? s[c + 3] : 0.0f;
      d[q] = v;
    }
  }
}

// dst (rows x cols) = the first cols columns of src (rows x ld), or dst += them (ACCUMULATE: one
// addition per element, as the kernel's own epilogue does it). Same grid as pad_columns.
template <bool ACCUMULATE>
__global__ void unpad_columns(std::int64_t rows, std::int64_t cols, std::int64_t ld, const float* __restrict__ src,
                              float* __restrict__ dst) {
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* const s = src + r * ld;
    float* const d = dst + r * cols;
    for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < cols;
         j += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
      d[j] = ACCUMULATE ? d[j] + s[j] : s[j];
  }
}

constexpr int kCopyThreads = 256;

// A grid for `rows` rows of `per_row` threads' work each (pad_columns, unpad_columns).
dim3 copy_grid(std::int64_t rows, std::int64_t per_row) {
  return dim3(static_cast<unsigned>(std::min(ceil_div(per_row, kCopyThreads), kMaxGridY)),
              static_cast<unsigned>(std::min(rows, kMaxGridY)), 1);
}

// ---- staging ------------------------------------------------------------------------------------

// Whether g's B rows are not 16-byte aligned (so the kernel would copy B 4 bytes at a time) and
// the problem is large enough for the copies to pay.
bool worth_staging(const GpuGemm& g) {
  const bool aligned = g.n % 4 == 0 && is_aligned(g.b, 16);
  return !aligned && static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) >= kStageMinVolume;
}

// The problem as the kernel runs it: B copied into a k x n4 buffer padded with zero columns, and,
// where n4 != n, C an m x n4 buffer that unstage() copies back (so the kernel writes it, never
// adds: accumulation happens in that copy). Both buffers in the context's operand scratch.
GpuGemm stage(const GpuGemm& g, GpuContext& ctx) {
  const std::int64_t n4 = ceil_div(g.n, 4) * 4;
  const std::size_t b_bytes = static_cast<std::size_t>(g.k * n4) * sizeof(float);
  const std::size_t c_offset = (b_bytes + 255) / 256 * 256;  // 16-byte rows from a 256-byte boundary
  const std::size_t c_bytes = n4 != g.n ? static_cast<std::size_t>(g.m * n4) * sizeof(float) : 0;
  auto* const scratch = static_cast<unsigned char*>(ctx.operand_scratch(c_offset + c_bytes));
  auto* const b4 = reinterpret_cast<float*>(scratch);
  pad_columns<<<copy_grid(g.k, n4 / 4), kCopyThreads, 0, g.stream>>>(g.k, g.n, n4, static_cast<const float*>(g.b), b4);
  CUDA_CHECK_LAUNCH();
  GpuGemm staged = g;
  staged.n = n4;
  staged.b = b4;
  if (n4 != g.n) {
    staged.c = scratch + c_offset;
    staged.accumulate = false;
  }
  return staged;
}

// C = (or +=) the first n columns of the staged C, where it is a buffer of its own.
void unstage(const GpuGemm& g, const GpuGemm& staged) {
  if (staged.c == g.c) return;
  const dim3 grid = copy_grid(g.m, g.n);
  const auto* const src = static_cast<const float*>(staged.c);
  auto* const dst = static_cast<float*>(g.c);
  static_switch(
      [&](auto accumulate) {
        unpad_columns<accumulate()><<<grid, kCopyThreads, 0, g.stream>>>(g.m, g.n, staged.n, src, dst);
      },
      g.accumulate);
  CUDA_CHECK_LAUNCH();
}

// ---- the tiles, with or without the tail split -------------------------------------------------

// Blocks of Cfg's kernel resident at once on the current device.
template <class Cfg>
std::int64_t resident() {
  return resident_blocks(reinterpret_cast<const void*>(&warptile_gemm_kernel<Cfg, true, false, false>), Cfg::kThreads,
                         Cfg::kSmemBytes);
}

// Rows [row0, row0 + rows) of g's C: the same B, A and C from row row0.
GpuGemm row_band(const GpuGemm& g, std::int64_t row0, std::int64_t rows) {
  GpuGemm band = g;
  band.m = rows;
  band.a = static_cast<const float*>(g.a) + row0 * g.k;
  band.c = static_cast<float*>(g.c) + row0 * g.n;
  return band;
}

// g's C (g.accumulate honoured) with Cfg's kernel: in one launch, or, with split_tail and a plan
// that splits, the rows of whole waves in one and the tail with K split in another, its partial
// C's in the context's scratch, summed onto C in a fixed order.
template <class Cfg>
void multiply(const GpuGemm& g, GpuContext& ctx, bool split_tail) {
  const bool vec_b = g.n % 4 == 0 && is_aligned(g.b, 16);
  const bool vec_c = g.n % 4 == 0 && is_aligned(g.c, 16);
  const std::int64_t tiles_m = ceil_div(g.m, Cfg::BM);
  const TailSplit plan = split_tail
                             ? plan_tail_split(tiles_m, ceil_div(g.n, Cfg::BN), ceil_div(g.k, Cfg::BK), resident<Cfg>())
                             : TailSplit{tiles_m, 1};
  const std::int64_t main_m = std::min(g.m, plan.main_rows * Cfg::BM);
  if (main_m > 0) {
    const GpuGemm top = row_band(g, 0, main_m);
    static_switch([&](auto vec_b_,
                      auto accumulate) { launch_warptile<Cfg, vec_b_(), accumulate(), false>(top, vec_c, 1, nullptr); },
                  vec_b, g.accumulate);
  }
  if (main_m == g.m) return;
  const GpuGemm tail = row_band(g, main_m, g.m - main_m);
  const std::int64_t count = tail.m * tail.n;
  void* const partials = ctx.scratch(static_cast<std::size_t>(plan.splits * count) * sizeof(float));
  // Partial C z starts z * count floats in: 16-byte aligned when n % 4 == 0 (the scratch is).
  static_switch(
      [&](auto vec_b_) { launch_warptile<Cfg, vec_b_(), false, true>(tail, g.n % 4 == 0, plan.splits, partials); },
      vec_b);
  launch_sum_splits<float>(count, plan.splits, partials, tail.c, g.accumulate, g.stream);
}

template <class Cfg, bool SPLIT_TAIL>
void run_staged(const GpuGemm& g, GpuContext& ctx) {
  if (!worth_staging(g)) return multiply<Cfg>(g, ctx, SPLIT_TAIL);
  const GpuGemm staged = stage(g, ctx);
  multiply<Cfg>(staged, ctx, SPLIT_TAIL);
  unstage(g, staged);
}

bool f32_staged_only(const GpuGemm& g, std::string* why) {
  if (g.dtype == DType::f32) return true;
  if (why) *why = "the staged warptile kernels take float32 only (float64: warptile-64x64 and the others)";
  return false;
}

}  // namespace

std::vector<GpuKernel> warptile_staged_kernels() {
  std::vector<GpuKernel> kernels{
      {"warptile-128x128-staged",
       "warptile-128x128 on 16-byte-aligned copies of B and C when N % 4 != 0 and m n k >= 2^30 (f32 only)",
       &f32_staged_only, &run_staged<F32_128x128, false>},
      {"warptile-128x128-staged-tail",
       "warptile-128x128-staged, the tiles of the last partial wave with K split to fill a wave (f32 only)",
       &f32_staged_only, &run_staged<F32_128x128, true>},
      {"warptile-128x256-16x8-staged",
       "warptile-128x256-16x8 on 16-byte-aligned copies of B and C when N % 4 != 0 and m n k >= 2^30 (f32 only)",
       &f32_staged_only, &run_staged<F32_128x256_16x8, false>},
      {"warptile-128x256-16x8-staged-tail",
       "warptile-128x256-16x8-staged, the tiles of the last partial wave with K split to fill a wave (f32 only)",
       &f32_staged_only, &run_staged<F32_128x256_16x8, true>},
  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;  // in the epilogue, sum_splits or the copy back
  return kernels;
}

}  // namespace tessera::kernels
