// FP64 tensor cores with Hopper's m16n8k8 DMMA (mma.sync .f64, sm_90; SASS DMMA.16x8x8), fed by
// 16-byte shared-memory loads straight into the mma's operand registers: the float64 kernels
// after tensorcore.cu's `dmma` (m16n8k4, 8-byte fragment loads).
//
// The mma runs transposed: C^T = B^T A^T. Its A operand (16 x 8, two rows per lane) is a pair of
// columns of B, its B operand (8 x 8, one column per lane) a row of A, so both come from the
// tiles as they lie in memory (row-major, copied by 16-byte cp.async):
//   - a product over k may sum in any order as long as both operands agree, so the mma's k index
//     kappa = t + 4 i (lane t = lane % 4 holds i = 0, 1) is taken as the stored k 2 t + i: a
//     lane's two k values of A's row are adjacent, one LDS.128;
//   - the mma's rows g and g + 8 (lane g = lane / 4 holds both) are taken as C's columns 2 g and
//     2 g + 1: adjacent in B's row, one LDS.128 per k. A lane's accumulators are then C pairs
//     (r, 2g .. 2g + 1), 16-byte stores.
// No register moves between the loads and the DMMAs (the first version, with the mma
// untransposed, needed 252 per 16 DMMAs to reorder 8-byte values into the operand registers).
//
// Banks (a quarter warp, 8 lanes, per 16-byte access): no padding (cp.async writes whole
// chunks); A's 16-byte chunks are XOR-swizzled by 4 (row % 2), so lanes g and g + 1 fall in
// opposite halves of the 32 banks; B's by 2 ((k / 2) % 4), which puts the four k rows of a
// quarter warp in different banks.
//
// Tiles are visited in groups of 16 tile rows, column by column within a group, so the blocks
// resident together share A's rows and B's columns in L2 instead of sweeping all of B per wave.
//
// The copies: each thread's source pointers advance a k block at a time and its shared-memory
// destinations are fixed offsets, and the next k block's copies are issued after the first mma
// step (cp_async_pipeline_overlapped). The first version worked out every copy's 64-bit address
// and guard after the barrier, ~200 integer instructions per 64 DMMAs in a basic block of their
// own, which every warp of the SM ran at the same moment: ncu had the DP tensor pipe 80% busy
// at 4096^3 (issue slots 18.5%), and the DMMAs idle for that stretch of each k block. Interior
// tiles copy without checks; tiles on C's edge or with a partial last k block check each copy.
//
// Measured (H200, 2026-12-02, `tessera bench`, against cuBLAS DGEMM in its default math mode;
// docs/performance-log.md), two calls: dmma8-128x128-k32 93.9 / 97.1 / 97.8% and 90.8 / 96.5 /
// 96.3% at 4096 / 8192 / 16384 (88.7 / 93.8 / 91.7% before the copies were reworked), dmma8 95.1
// / 94.6 / 90.0% and 92.8 / 93.5 / 86.3%, and 114-116% at 4099x4097x4095. cuBLAS's own DGEMM on
// the H200 is a 128x64x16, 3-stage, 2x2-warp kernel on the same m16n8k8 DMMA (ncu:
// sm90_xmma_gemm_f64..._tilesize128x64x16_stage3_warpsize2x2x1_tensor16x8x8), dmma8's tiling.
// The m16n8k16 shape (a quarter of the DMMA instructions) was slower in every tiling tried
// (128x64 tiles: 78.9 / 81.4 / 77.7% against 85.5 / 87.6 / 81.7%), so only k8 is kept.
//
// The -sk variants share the last, partial wave of tiles over the whole GPU by stream-K
// (kernels/tail_split.hpp) with a fixed-order fixup pass. Measured beside the plain ones they are
// within +-2 points (4096^3: 7.76 waves of 128x128 tiles, yet ncu had the SMs active 96% of the
// time already): kept for `tessera tune`, which picks per shape.
//
// Edges as in tensorcore.cu: zero-filled copies, guarded stores; any M, N, K >= 1 (8-byte
// copies where rows are not 16-byte aligned). C += A * B through the ACCUMULATE flag.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tail_split.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

// The m16n8k8 .f64 mma: a[2 i + h] holds A(g + 8 h, t + 4 i), b[i] holds B(t + 4 i, g), for lane
// g = lane / 4, t = lane % 4 (i = 0, 1: kKs = 2 k values per lane and row). The kernel's index
// math is written for any k a multiple of 4; m16n8k16 measured slower (the note above).
struct F64Mma {
  static constexpr int kK = 8, kKs = kK / 4, kARegs = kK / 2, kBRegs = kK / 4;
};

// asm volatile: the DMMAs stay in program order among themselves (as measured).
__device__ __forceinline__ void mma_f64(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
  // Before sm_90: m8n8k4 on rows g (d0, d1) and g + 8 (d2, d3), once per k4 half.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d[0]), "+d"(d[1])
        : "d"(a[2 * i]), "d"(b[i]));
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d[2]), "+d"(d[3])
        : "d"(a[2 * i + 1]), "d"(b[i]));
  }
#endif
}

// 16 bytes of shared memory into two doubles (one LDS.128).
__device__ __forceinline__ void lds128(const double* p, double& x, double& y) {
  const double2 v = *reinterpret_cast<const double2*>(p);
  x = v.x;
  y = v.y;
}

template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, int MIN_BLOCKS_>
struct DmmaConfig {
  using Mma = F64Mma;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int kMinBlocks = MIN_BLOCKS_;
  // The mma runs transposed (see the file's note): its 16 rows are columns of C, its 8 columns
  // rows of C. Per warp: NTN tiles of 16 columns, MTM tiles of 8 rows.
  static constexpr int NTN = WN / 16, MTM = WM / 8;
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  // Both tiles row-major as in memory, unpadded; their 16-byte chunks swizzled (banks note).
  static constexpr int kLdA = BK, kLdB = BN;
  static constexpr int kBOffset = BM * kLdA;           // B's place in a stage
  static constexpr int kStage = kBOffset + BK * kLdB;  // doubles per stage
  static constexpr std::size_t kSmemBytes = std::size_t{STAGES} * kStage * sizeof(double);
  static constexpr int kGroupRows = 16;  // tile rows per raster group

  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 8 == 0 && WN % 16 == 0, "dmma: warp tiles divide the block");
  static_assert(BK % Mma::kK == 0 && BK % 16 == 0 && BN % 16 == 0,
                "dmma: whole mma steps; rows of whole 128-byte swizzle groups");
  static_assert(kThreads <= 1024 && STAGES >= 2, "dmma: block size and pipeline depth");
  static_assert(kSmemBytes <= 227 * 1024, "dmma: the stages fit an SM's shared memory");
};

// A's element (r, k) in a stage: its 16-byte chunk XOR-swizzled by 4 (r % 2), which puts rows g
// and g + 1 of a quarter warp in opposite halves of the 32 banks.
template <int LD>
__device__ __forceinline__ int a_index(int r, int k) {
  return r * LD + ((((k >> 1) ^ ((r & 1) << 2))) << 1) + (k & 1);
}

// B's element (r, col) in a stage: its 16-byte chunk XOR-swizzled by 2 ((r / KS) % 4), which puts
// the four k rows a quarter warp reads (r = KS t + i, t = 0..3) in different banks.
template <int KS, int LD>
__device__ __forceinline__ int b_index(int r, int col) {
  return r * LD + ((((col >> 1) ^ (((r / KS) & 3) << 1))) << 1) + (col & 1);
}

// Tile t of the grouped raster: tile rows in groups of group_rows, column-major inside a group.
__device__ __forceinline__ void grouped_tile(std::int64_t t, std::int64_t tiles_m, std::int64_t tiles_n, int group_rows,
                                             std::int64_t& tm, std::int64_t& tn) {
  const std::int64_t per_group = std::int64_t{group_rows} * tiles_n;
  const std::int64_t first = (t / per_group) * group_rows;
  const std::int64_t rows = tiles_m - first < group_rows ? tiles_m - first : group_rows;
  const std::int64_t in_group = t % per_group;
  tm = first + in_group % rows;
  tn = in_group / rows;
}

// How many distinct values a swizzle of period `period` rows takes on rows r0 + j * step.
constexpr int residues(int step, int period) {
  int x = step % period, y = period;
  while (x != 0) {
    const int t = y % x;
    y = x;
    x = t;
  }
  return period / y;
}

// C's tile (tile_m, tile_n), k blocks [kb0, kb0 + count), into acc (which starts at zero): a
// STAGES-deep cp.async pipeline over shared memory feeding the transposed DMMAs.
//
// The copies are what the DMMA pipe waits on between k blocks, so they are kept cheap: each
// thread's source pointers advance by a k block at a time (no 64-bit index arithmetic per copy),
// its shared-memory destinations are fixed offsets (A's swizzle depends on the row's parity, B's
// on (row / KS) % 4, so a few base offsets and immediates cover every copy), and the copies of
// the next k block are issued after the first mma step of this one, in the same basic block, so
// the compiler interleaves them with the DMMAs instead of running them all after the barrier
// (the first version: ~200 integer instructions per 64 DMMAs there, in a block of their own; the
// tensor pipe 80% busy at 4096^3). GUARDED: the tile crosses C's edge or its last k block is
// partial, so each copy is checked (rows, columns and k beyond the matrices read as zeros);
// interior tiles copy without checks.
template <class Cfg, bool VEC_A, bool VEC_B, bool GUARDED>
__device__ __forceinline__ void tile_product(std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                                             const double* b, std::int64_t tile_m, std::int64_t tile_n,
                                             std::int64_t kb0, std::int64_t count, double* smem,
                                             double (&acc)[Cfg::NTN][Cfg::MTM][4]) {
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES, KM = Mma::kK, KS = Mma::kKs;
  constexpr int kThreads = Cfg::kThreads, kLdA = Cfg::kLdA, kLdB = Cfg::kLdB;
  constexpr int NTN = Cfg::NTN, MTM = Cfg::MTM;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m0 = (warp / Cfg::kWarpsN) * Cfg::WM, warp_n0 = (warp % Cfg::kWarpsN) * Cfg::WN;

  // This thread's copies per k block (as in tensorcore.cu): 16-byte chunks where the rows allow.
  constexpr int kAWidth = VEC_A ? 2 : 1, kBWidth = VEC_B ? 2 : 1;
  constexpr int kAChunksPerRow = BK / kAWidth, kBChunksPerRow = BN / kBWidth;
  constexpr int kARowStep = kThreads / kAChunksPerRow, kARows = BM / kARowStep;
  constexpr int kBRowStep = kThreads / kBChunksPerRow, kBRows = BK / kBRowStep;
  static_assert(kThreads % kAChunksPerRow == 0 && BM % kARowStep == 0, "dmma: A rows split evenly");
  static_assert(kThreads % kBChunksPerRow == 0 && BK % kBRowStep == 0, "dmma: B rows split evenly");
  const int a_row = tid / kAChunksPerRow, a_k = (tid % kAChunksPerRow) * kAWidth;
  const int b_row = tid / kBChunksPerRow, b_col = (tid % kBChunksPerRow) * kBWidth;

  // Destinations, bytes from a stage's start: A's rows a_row + j kARowStep take RA swizzles, B's
  // rows b_row + j kBRowStep RB (a_index: period 2 rows; b_index: 4 KS).
  constexpr int RA = residues(kARowStep, 2), RB = residues(kBRowStep, 4 * KS);
  int a_dst[RA], b_dst[RB];
#pragma unroll
  for (int r = 0; r < RA; ++r) a_dst[r] = a_index<kLdA>(a_row + r * kARowStep, a_k) * 8;
#pragma unroll
  for (int r = 0; r < RB; ++r) b_dst[r] = (Cfg::kBOffset + b_index<KS, kLdB>(b_row + r * kBRowStep, b_col)) * 8;
  const auto smem_base = static_cast<unsigned>(__cvta_generic_to_shared(smem));

  // Sources at the next k block to copy (kernels/tile_copy.cuh).
  const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;
  CopyCursor<double, BM, BK, kARowStep, kBRowStep, GUARDED> src(a, b, m, n, k, row0, col0, kb0 * BK, k, a_row, a_k,
                                                                b_row, b_col);

  // The copies of the next k block into the stage at byte offset `stage_bytes`.
  auto load = [&](int stage_bytes) {
    const double* p = src.a_next;
#pragma unroll
    for (int j = 0; j < kARows; ++j, p += src.a_rows_apart)
      copy_chunk<kAWidth * 8, GUARDED>(smem_base + stage_bytes + a_dst[j % RA] + (j / RA) * (RA * kARowStep * kLdA * 8),
                                       p, a, src.a_ok(j, 0));
    p = src.b_next;
#pragma unroll
    for (int j = 0; j < kBRows; ++j, p += src.b_rows_apart)
      copy_chunk<kBWidth * 8, GUARDED>(smem_base + stage_bytes + b_dst[j % RB] + (j / RB) * (RB * kBRowStep * kLdB * 8),
                                       p, b, src.b_ok(j));
    src.advance();
  };

  // One mma step (KM of k) of the stage at `As`.
  auto step = [&](const double* As, int kk) {
    const double* const Bs = As + Cfg::kBOffset;
    // The mma's A (16 x KM, row g + 8 h at k t + 4 i): columns n0 + 2 g + h of B at k row
    // kk + KS t + i, a 16-byte pair.
    double af[NTN][Mma::kARegs];
#pragma unroll
    for (int j = 0; j < NTN; ++j)
#pragma unroll
      for (int i = 0; i < KS; ++i)
        lds128(&Bs[b_index<KS, kLdB>(kk + KS * t + i, warp_n0 + 16 * j + 2 * g)], af[j][2 * i], af[j][2 * i + 1]);
#pragma unroll
    for (int jm = 0; jm < MTM; ++jm) {
      // The mma's B (KM x 8, column g at k t + 4 i): row m0 + g of A at k kk + KS t + i.
      double bf[Mma::kBRegs];
#pragma unroll
      for (int i = 0; i < KS; i += 2)
        lds128(&As[a_index<kLdA>(warp_m0 + 8 * jm + g, kk + KS * t + i)], bf[i], bf[i + 1]);
#pragma unroll
      for (int j = 0; j < NTN; ++j) mma_f64(acc[j][jm], af[j], bf);
    }
  };

  cp_async_pipeline_overlapped<STAGES>(
      count, [&](int stage) { load(stage * (Cfg::kStage * 8)); },
      [&](int stage, auto&& issue) {
        const double* const As = smem + stage * Cfg::kStage;
        step(As, 0);
        issue();
#pragma unroll
        for (int kk = KM; kk < BK; kk += KM) step(As, kk);
      });
}

// tile_product, without checks where the tile lies inside C and its k blocks inside K.
template <class Cfg, bool VEC_A, bool VEC_B>
__device__ __forceinline__ void tile_product(std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                                             const double* b, std::int64_t tile_m, std::int64_t tile_n,
                                             std::int64_t kb0, std::int64_t count, double* smem,
                                             double (&acc)[Cfg::NTN][Cfg::MTM][4]) {
  const bool inside = (tile_m + 1) * Cfg::BM <= m && (tile_n + 1) * Cfg::BN <= n && (kb0 + count) * Cfg::BK <= k;
  if (inside)
    tile_product<Cfg, VEC_A, VEC_B, false>(m, n, k, a, b, tile_m, tile_n, kb0, count, smem, acc);
  else
    tile_product<Cfg, VEC_A, VEC_B, true>(m, n, k, a, b, tile_m, tile_n, kb0, count, smem, acc);
}

// acc into the rows x cols matrix `out` (leading dimension cols) at (row0, col0): lane (g, t) of
// mma tile (j, jm) holds the mma's (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1), i.e. rows
// m0 + 2t and m0 + 2t + 1, columns n0 + 2g and n0 + 2g + 1 (a pair).
template <class Cfg, bool ACCUMULATE>
__device__ __forceinline__ void store_tile(double* out, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                                           std::int64_t col0, const double (&acc)[Cfg::NTN][Cfg::MTM][4], bool vec) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m0 = (warp / Cfg::kWarpsN) * Cfg::WM, warp_n0 = (warp % Cfg::kWarpsN) * Cfg::WN;
#pragma unroll
  for (int j = 0; j < Cfg::NTN; ++j)
#pragma unroll
    for (int jm = 0; jm < Cfg::MTM; ++jm) {
      const std::int64_t r = row0 + warp_m0 + 8 * jm + 2 * t;
      const std::int64_t col = col0 + warp_n0 + 16 * j + 2 * g;
      store_pair<ACCUMULATE>(out, rows, cols, r, col, acc[j][jm][0], acc[j][jm][2], vec);
      store_pair<ACCUMULATE>(out, rows, cols, r + 1, col, acc[j][jm][1], acc[j][jm][3], vec);
    }
}

// The plan's work items, blockIdx.x on (grid-stride): a whole tile into C (C += with ACCUMULATE),
// or a stream-K block's range of k blocks, one partial tile (BM x BN, row-major) per tile it
// touches into its slot of `partials` (kernels/tail_split.hpp). Without STREAM_K every tile is
// whole, in a loop of its own (the stream-K loop keeps a few more values live across the tile:
// 8-44 bytes of spills outside the main loop at 255 registers; this one has none at 252).
template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE, bool STREAM_K>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    dmma_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const double* __restrict__ a,
                const double* __restrict__ b, double* __restrict__ c, bool vec_c, StreamKPlan plan,
                double* __restrict__ partials) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double* const smem = reinterpret_cast<double*>(smem_raw);
  const std::int64_t tiles_m = ceil_div(m, BM), tiles_n = ceil_div(n, BN);
  const std::int64_t k_blocks = plan.k_blocks;

  if constexpr (!STREAM_K) {
    for (std::int64_t tile = blockIdx.x; tile < plan.tiles; tile += gridDim.x) {
      std::int64_t tile_m, tile_n;
      grouped_tile(tile, tiles_m, tiles_n, Cfg::kGroupRows, tile_m, tile_n);
      double acc[Cfg::NTN][Cfg::MTM][4] = {};
      tile_product<Cfg, VEC_A, VEC_B>(m, n, k, a, b, tile_m, tile_n, 0, k_blocks, smem, acc);
      store_tile<Cfg, ACCUMULATE>(c, m, n, tile_m * BM, tile_n * BN, acc, vec_c);
    }
  } else {
    for (std::int64_t work = blockIdx.x; work < plan.work_items(); work += gridDim.x) {
      const bool whole = work < plan.dp_tiles;
      const std::int64_t j = work - plan.dp_tiles;  // the stream-K block, when not whole
      std::int64_t it = whole ? work * k_blocks : plan.begin(j);
      const std::int64_t end = whole ? it + k_blocks : plan.begin(j + 1);
      while (it < end) {
        const std::int64_t tile = it / k_blocks, kb0 = it % k_blocks;
        const std::int64_t count = k_blocks - kb0 < end - it ? k_blocks - kb0 : end - it;
        std::int64_t tile_m, tile_n;
        grouped_tile(tile, tiles_m, tiles_n, Cfg::kGroupRows, tile_m, tile_n);
        double acc[Cfg::NTN][Cfg::MTM][4] = {};
        tile_product<Cfg, VEC_A, VEC_B>(m, n, k, a, b, tile_m, tile_n, kb0, count, smem, acc);
        if (whole)
          store_tile<Cfg, ACCUMULATE>(c, m, n, tile_m * BM, tile_n * BN, acc, vec_c);
        else
          store_tile<Cfg, false>(partials + plan.slot(j, tile) * (BM * BN), BM, BN, 0, 0, acc, true);
        it += count;
      }
    }
  }
}

// The stream-K tiles' second pass: tile dp_tiles + blockIdx.y of C = (or +=) the sum of its
// partials, in the order of the blocks that wrote them. A thread per pair of columns.
template <class Cfg, bool ACCUMULATE>
__global__ void dmma_fixup(std::int64_t m, std::int64_t n, double* __restrict__ c, bool vec_c, StreamKPlan plan,
                           const double* __restrict__ partials) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN;
  const std::int64_t tile = plan.dp_tiles + blockIdx.y;
  std::int64_t tile_m, tile_n;
  grouped_tile(tile, ceil_div(m, BM), ceil_div(n, BN), Cfg::kGroupRows, tile_m, tile_n);
  const std::int64_t first = plan.block_of(tile * plan.k_blocks);
  const std::int64_t last = plan.block_of((tile + 1) * plan.k_blocks - 1);
  for (int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); e < BM * BN / 2;
       e += static_cast<int>(gridDim.x * blockDim.x)) {
    const int r = e / (BN / 2), col = 2 * (e % (BN / 2));
    double x = 0, y = 0;
    for (std::int64_t j = first; j <= last; ++j) {
      const double2 v = *reinterpret_cast<const double2*>(partials + plan.slot(j, tile) * (BM * BN) + r * BN + col);
      x += v.x;
      y += v.y;
    }
    store_pair<ACCUMULATE>(c, m, n, tile_m * BM + r, tile_n * BN + col, x, y, vec_c);
  }
}

constexpr int kFixupThreads = 256;

template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE, bool STREAM_K>
void launch_dmma(const GpuGemm& g, GpuContext& ctx, bool vec_c) {
  const auto kernel = &dmma_kernel<Cfg, VEC_A, VEC_B, ACCUMULATE, STREAM_K>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes);
  const std::int64_t tiles = ceil_div(g.m, Cfg::BM) * ceil_div(g.n, Cfg::BN), k_blocks = ceil_div(g.k, Cfg::BK);
  const StreamKPlan plan =
      STREAM_K ? plan_stream_k(tiles, k_blocks,
                               resident_blocks(reinterpret_cast<const void*>(kernel), Cfg::kThreads, Cfg::kSmemBytes))
               : StreamKPlan{tiles, k_blocks, tiles, 0};
  double* const partials =
      plan.sk_blocks > 0 ? static_cast<double*>(
                               ctx.scratch(static_cast<std::size_t>(plan.slots()) * Cfg::BM * Cfg::BN * sizeof(double)))
                         : nullptr;
  const auto blocks = static_cast<unsigned>(std::min(plan.work_items(), kMaxGridX));
  kernel<<<blocks, Cfg::kThreads, Cfg::kSmemBytes, g.stream>>>(g.m, g.n, g.k, static_cast<const double*>(g.a),
                                                               static_cast<const double*>(g.b),
                                                               static_cast<double*>(g.c), vec_c, plan, partials);
  CUDA_CHECK_LAUNCH();
  if (plan.sk_blocks == 0) return;
  const dim3 grid(Cfg::BM * Cfg::BN / 2 / kFixupThreads, static_cast<unsigned>(plan.tiles - plan.dp_tiles));
  dmma_fixup<Cfg, ACCUMULATE>
      <<<grid, kFixupThreads, 0, g.stream>>>(g.m, g.n, static_cast<double*>(g.c), vec_c, plan, partials);
  CUDA_CHECK_LAUNCH();
}

template <class Cfg, bool STREAM_K>
void run_dmma(const GpuGemm& g, GpuContext& ctx) {
  const bool vec_a = g.k % 2 == 0 && is_aligned(g.a, 16);
  const bool vec_b = g.n % 2 == 0 && is_aligned(g.b, 16);
  const bool vec_c = g.n % 2 == 0 && is_aligned(g.c, 16);
  static_switch([&](auto vec_a_, auto vec_b_,
                    auto accumulate) { launch_dmma<Cfg, vec_a_(), vec_b_(), accumulate(), STREAM_K>(g, ctx, vec_c); },
                vec_a, vec_b, g.accumulate);
}

bool f64_only(const GpuGemm& g, std::string* why) {
  if (g.dtype == DType::f64) return true;
  if (why) *why = "the dmma kernels are float64 only; float32 takes the FFMA or tf32/bf16 kernels";
  return false;
}

// The two kept (measured 2026-12-01 beside 128x64x16 with 4 stages, 128x64x32, 128x128x16 with 4
// and 6 stages: all within 1-5 points of these, docs/performance-log.md):
//                                BM   BN  BK  WM  WN STAGES MIN_BLOCKS
using Dmma8Cfg = DmmaConfig<128, 64, 16, 64, 32, 3, 2>;          // 128 threads, 2 blocks per SM
using Dmma8x128K32Cfg = DmmaConfig<128, 128, 32, 64, 32, 3, 1>;  // 256 threads

}  // namespace

std::vector<GpuKernel> dmma_kernels() {
  std::vector<GpuKernel> kernels{
      {"dmma8",
       "FP64 tensor cores, mma.sync m16n8k8 run transposed, 16-byte fragment loads, 128x64x16 tiles (cuBLAS's own), 3 "
       "stages",
       &f64_only, &run_dmma<Dmma8Cfg, false>},
      {"dmma8-128x128-k32", "dmma8 on 128x128x32 tiles, 8 warps, 3 stages", &f64_only,
       &run_dmma<Dmma8x128K32Cfg, false>},
      {"dmma8-sk", "dmma8, the last partial wave's tiles shared over the GPU by stream-K (a deterministic fixup pass)",
       &f64_only, &run_dmma<Dmma8Cfg, true>},
      {"dmma8-128x128-k32-sk", "dmma8-128x128-k32, the last partial wave's tiles shared by stream-K", &f64_only,
       &run_dmma<Dmma8x128K32Cfg, true>},

  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;
  return kernels;
}

}  // namespace tessera::kernels
