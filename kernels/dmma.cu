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
// Measured (H200, 2026-12-01, one `tessera bench` call, against cuBLAS DGEMM in its default math
// mode; docs/performance-log.md): dmma8-128x128-k32 88.7 / 93.8 / 91.7% at 4096 / 8192 / 16384
// (tensorcore.cu's dmma 85.0 / 82.8 / 79.2% in the same call), dmma8 104.5% at 4099x4097x4095.
// cuBLAS's own DGEMM on the H200 is a 128x64x16, 3-stage, 2x2-warp kernel on the same m16n8k8
// DMMA (ncu: sm90_xmma_gemm_f64..._tilesize128x64x16_stage3_warpsize2x2x1_tensor16x8x8), i.e.
// dmma8's tiling: what it has over dmma8 (87-89%) is instruction scheduling. The m16n8k16 shape
// (a quarter of the DMMA instructions) was slower in every tiling tried (128x64 tiles: 78.9 /
// 81.4 / 77.7% against 85.5 / 87.6 / 81.7%), so only k8 is kept.
//
// Edges as in tensorcore.cu: zero-filled copies, guarded stores; any M, N, K >= 1 (8-byte
// copies where rows are not 16-byte aligned). C += A * B through the ACCUMULATE flag.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
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

template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    dmma_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const double* __restrict__ a,
                const double* __restrict__ b, double* __restrict__ c, bool vec_c) {
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES, KM = Mma::kK, KS = Mma::kKs;
  constexpr int kThreads = Cfg::kThreads, kLdA = Cfg::kLdA, kLdB = Cfg::kLdB;
  constexpr int NTN = Cfg::NTN, MTM = Cfg::MTM;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double* const smem = reinterpret_cast<double*>(smem_raw);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int warp_m0 = (warp / Cfg::kWarpsN) * Cfg::WM, warp_n0 = (warp % Cfg::kWarpsN) * Cfg::WN;
  const std::int64_t k_blocks = ceil_div(k, BK);
  const std::int64_t tiles_m = ceil_div(m, BM), tiles_n = ceil_div(n, BN);

  // This thread's copies per k block (as in tensorcore.cu): 16-byte chunks where the rows allow.
  constexpr int kAWidth = VEC_A ? 2 : 1, kBWidth = VEC_B ? 2 : 1;
  constexpr int kAChunksPerRow = BK / kAWidth, kBChunksPerRow = BN / kBWidth;
  constexpr int kARowStep = kThreads / kAChunksPerRow, kARows = BM / kARowStep;
  constexpr int kBRowStep = kThreads / kBChunksPerRow, kBRows = BK / kBRowStep;
  static_assert(kThreads % kAChunksPerRow == 0 && BM % kARowStep == 0, "dmma: A rows split evenly");
  static_assert(kThreads % kBChunksPerRow == 0 && BK % kBRowStep == 0, "dmma: B rows split evenly");
  const int a_row = tid / kAChunksPerRow, a_k = (tid % kAChunksPerRow) * kAWidth;
  const int b_row = tid / kBChunksPerRow, b_col = (tid % kBChunksPerRow) * kBWidth;

  for (std::int64_t tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    std::int64_t tile_m, tile_n;
    grouped_tile(tile, tiles_m, tiles_n, Cfg::kGroupRows, tile_m, tile_n);
    const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;
    bool a_row_ok[kARows], b_col_ok;
    const double *a_src, *b_src;
    tile_copy_origin<kARows, kARowStep>(a_row_ok, b_col_ok, a_src, b_src, a, b, m, n, k, row0, col0, a_row, a_k, b_row,
                                        b_col);

    auto load_stage = [&](int stage, std::int64_t kb) {
      double* const As = smem + stage * Cfg::kStage;
      double* const Bs = As + Cfg::kBOffset;
      const std::int64_t k0 = kb * BK;
      const bool a_k_ok = k0 + a_k < k;
#pragma unroll
      for (int j = 0; j < kARows; ++j) {
        const bool ok = a_k_ok && a_row_ok[j];
        const double* src = a_src + std::int64_t{j * kARowStep} * k + k0;
        cp_async<kAWidth * sizeof(double)>(&As[a_index<kLdA>(a_row + j * kARowStep, a_k)], ok ? src : a, ok);
      }
#pragma unroll
      for (int j = 0; j < kBRows; ++j) {
        const int r = b_row + j * kBRowStep;
        const bool ok = b_col_ok && k0 + r < k;
        const double* src = b_src + (k0 + j * kBRowStep) * n;
        cp_async<kBWidth * sizeof(double)>(&Bs[b_index<KS, kLdB>(r, b_col)], ok ? src : b, ok);
      }
    };

    double acc[NTN][MTM][4] = {};
    cp_async_pipeline<STAGES>(k_blocks, load_stage, [&](int stage) {
      const double* const As = smem + stage * Cfg::kStage;
      const double* const Bs = As + Cfg::kBOffset;
#pragma unroll
      for (int kk = 0; kk < BK; kk += KM) {
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
      }
    });

    // Lane (g, t) of tile (j, jm) holds the mma's (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1):
    // C rows m0 + 2t and m0 + 2t + 1, columns n0 + 2g and n0 + 2g + 1 (a pair).
#pragma unroll
    for (int j = 0; j < NTN; ++j)
#pragma unroll
      for (int jm = 0; jm < MTM; ++jm) {
        const std::int64_t r = row0 + warp_m0 + 8 * jm + 2 * t;
        const std::int64_t col = col0 + warp_n0 + 16 * j + 2 * g;
        store_pair<ACCUMULATE>(c, m, n, r, col, acc[j][jm][0], acc[j][jm][2], vec_c);
        store_pair<ACCUMULATE>(c, m, n, r + 1, col, acc[j][jm][1], acc[j][jm][3], vec_c);
      }
  }
}

template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE>
void launch_dmma(const GpuGemm& g, bool vec_c) {
  const auto kernel = &dmma_kernel<Cfg, VEC_A, VEC_B, ACCUMULATE>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes);
  const std::int64_t tiles = ceil_div(g.m, Cfg::BM) * ceil_div(g.n, Cfg::BN);
  const auto blocks = static_cast<unsigned>(std::min(tiles, kMaxGridX));
  kernel<<<blocks, Cfg::kThreads, Cfg::kSmemBytes, g.stream>>>(g.m, g.n, g.k, static_cast<const double*>(g.a),
                                                               static_cast<const double*>(g.b),
                                                               static_cast<double*>(g.c), vec_c);
  CUDA_CHECK_LAUNCH();
}

template <class Cfg>
void run_dmma(const GpuGemm& g, GpuContext&) {
  const bool vec_a = g.k % 2 == 0 && is_aligned(g.a, 16);
  const bool vec_b = g.n % 2 == 0 && is_aligned(g.b, 16);
  const bool vec_c = g.n % 2 == 0 && is_aligned(g.c, 16);
  static_switch(
      [&](auto vec_a_, auto vec_b_, auto accumulate) { launch_dmma<Cfg, vec_a_(), vec_b_(), accumulate()>(g, vec_c); },
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
       &f64_only, &run_dmma<Dmma8Cfg>},
      {"dmma8-128x128-k32", "dmma8 on 128x128x32 tiles, 8 warps, 3 stages", &f64_only, &run_dmma<Dmma8x128K32Cfg>},
  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;
  return kernels;
}

}  // namespace tessera::kernels
