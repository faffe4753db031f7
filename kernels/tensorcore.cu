// Tensor cores through warp-level mma.sync (sm_80+; PTX "mma.sync.aligned"), on the tiles and
// the cp.async pipeline of warptile.cu. A warp computes its WM x WN tile of C as a grid of small
// matrix products done by the tensor cores in one instruction each:
//   "tf32"  m16n8k8  TF32 inputs, FP32 accumulation   (opt-in: inputs rounded to 10+1 bits)
//   "bf16"  m16n8k16 BF16 inputs, FP32 accumulation   (opt-in: inputs rounded to 7+1 bits)
//   "dmma"  m16n8k4  FP64 inputs and accumulation     (full float64: a candidate for `auto`;
//                    "-128x128", "-64x64": other block tiles)
// A and B stay float32 (float64 for dmma) in global and shared memory; the float32 values are
// rounded to TF32 (cvt.rna: to nearest, unit roundoff 2^-11) or BF16 (cvt.rn: 2^-8) as the
// fragments are loaded into registers. Accumulation is FP32 in the tensor cores. Only float32
// data for tf32/bf16 (float64 is refused: rounding it to 11 bits would be a silent disaster).
//
// Why: an H200's tensor cores do TF32 at ~8x and BF16 at ~15x the FP32 FFMA rate (cuBLAS: TF32
// 406, BF16 773 TFLOP/s vs SGEMM 51 at 8192). FP64 DMMA doubles the FP64 rate over DFMA
// (cuBLAS DGEMM 59-63 TFLOP/s in the default math mode, 47-50 pedantic, vs ~30 for a DFMA kernel).
//
// Shared-memory layouts (A row-major [BM][BK + PAD_A], B [BK][BN + PAD_B]) are padded so each
// fragment load of a warp touches 32 different banks: tf32 reads A(g, t) and B(t, g) (g = lane/4,
// t = lane%4): row strides = 4 and 8 (mod 32) words; bf16 reads A as 8-byte pairs (g, 2t..2t+1)
// and B at (2t, g): strides 8 and 4 (mod 32); dmma reads 8-byte A(g, t) and B(t, g): strides
// 4 (mod 16) doubles.
//
// FP64 on Hopper: m16n8k4 is the shape the FP64 tensor cores run natively (PTX 7.8, sm_90;
// SASS DMMA.16x8x4); the Ampere shape m8n8k4 runs at about half that rate there, which is where
// the first dmma (m8n8k4) stopped: 62% of cuBLAS DGEMM at 8192. With m16n8k4 and the same tiles:
// 99-108% of DGEMM in pedantic math (measured, docs/performance.md), which cost cuBLAS a quarter:
// dmma's 52.2 / 47.6 / 43.6 TFLOP/s at 4096 / 8192 / 16384 are 85 / 75 / 74% of DGEMM in the
// default math mode (61.6 / 63.2 / 59.0, measured a day later), so `auto` takes cuBLAS there.
// Below sm_90, m16n8k4 is issued as two m8n8k4 on rows g and g + 8 of the same fragments, so an
// sm_80 build keeps working.
//
// Measured (H200, 2026-11-29): mma.sync tf32 ~33-39% of cuBLAS TF32 and bf16 ~46-54% of cuBLAS
// GemmEx with CUBLAS_COMPUTE_32F_FAST_16BF on float32 data (~400 TFLOP/s; the BF16 baseline is
// now faster, docs/kernels.md) at 4096-8192: fragments from FP32 shared memory with scalar
// loads, no wgmma. On Hopper use wgmma.cu's kernels; these stay for sm_80 builds and as their
// fallback.
//
// Accumulation (GpuGemm::accumulate) is a template flag: the epilogue reads C where it writes
// it (C += A * B), as in warptile.cu.
//
// Edges: zero-filled tiles (cp.async with source size 0), guarded stores: any M, N, K >= 1.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

enum class Mma { kTf32, kBf16, kF64 };

// One mma.sync shape: T is the element type in memory, the product is kM x kN x kK.
template <Mma K>
struct MmaShape;
template <>
struct MmaShape<Mma::kTf32> {
  using T = float;
  static constexpr int kM = 16, kN = 8, kK = 8, kARegs = 4, kBRegs = 2, kCRegs = 4;
};
template <>
struct MmaShape<Mma::kBf16> {
  using T = float;
  static constexpr int kM = 16, kN = 8, kK = 16, kARegs = 4, kBRegs = 2, kCRegs = 4;
};
// FP64: m16n8k4, the shape Hopper's FP64 tensor cores run natively (PTX 7.8, sm_90). On older
// GPUs it is issued as two m8n8k4 (the sm_80 shape: rows g and g + 8 of the same fragments).
template <>
struct MmaShape<Mma::kF64> {
  using T = double;
  static constexpr int kM = 16, kN = 8, kK = 4, kARegs = 2, kBRegs = 1, kCRegs = 4;
};

// float -> TF32 (round to nearest, ties away: cvt.rna), in a 32-bit register.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// Two floats -> BF16x2 (round to nearest even); `lo` (the lower k index) in the low half.
// cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower.
__device__ __forceinline__ unsigned to_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// One m16n8kK mma.sync with FP32 accumulators in d and 32-bit A and B registers; SHAPE its shape
// and types.
#define TESSERA_MMA_F32(SHAPE)                                                             \
  asm("mma.sync.aligned." SHAPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                     \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                    MmaShape<Mma::kTf32>) {
  TESSERA_MMA_F32("m16n8k8.row.col.f32.tf32.tf32.f32");
}
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                    MmaShape<Mma::kBf16>) {
  TESSERA_MMA_F32("m16n8k16.row.col.f32.bf16.bf16.f32");
}
#undef TESSERA_MMA_F32
__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[2], const double (&b)[1], MmaShape<Mma::kF64>) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(b[0]));
#else
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a[0]), "d"(b[0]));
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d[2]), "+d"(d[3])
      : "d"(a[1]), "d"(b[0]));
#endif
}

// Fragment element types: 32-bit registers holding TF32 / BF16x2, or doubles.
template <Mma K>
using FragT = std::conditional_t<K == Mma::kF64, double, unsigned>;

// The A fragment of the mma tile whose top-left corner is `p` (row stride ld) in shared memory,
// for lane (g = lane / 4, t = lane % 4), in the register order mma.sync expects.
template <Mma K>
__device__ __forceinline__ void load_a(const typename MmaShape<K>::T* p, int ld, int g, int t,
                                       FragT<K> (&f)[MmaShape<K>::kARegs]) {
  if constexpr (K == Mma::kTf32) {  // (g, t) (g+8, t) (g, t+4) (g+8, t+4)
    const float* q = p + g * ld + t;
    f[0] = to_tf32(q[0]);
    f[1] = to_tf32(q[8 * ld]);
    f[2] = to_tf32(q[4]);
    f[3] = to_tf32(q[8 * ld + 4]);
  } else if constexpr (K == Mma::kBf16) {  // pairs (g, 2t..2t+1) (g+8, ..) (g, 2t+8..) (g+8, ..)
    const float* q = p + g * ld + 2 * t;
    const float2 x0 = *reinterpret_cast<const float2*>(q);
    const float2 x1 = *reinterpret_cast<const float2*>(q + 8 * ld);
    const float2 x2 = *reinterpret_cast<const float2*>(q + 8);
    const float2 x3 = *reinterpret_cast<const float2*>(q + 8 * ld + 8);
    f[0] = to_bf16x2(x0.x, x0.y);
    f[1] = to_bf16x2(x1.x, x1.y);
    f[2] = to_bf16x2(x2.x, x2.y);
    f[3] = to_bf16x2(x3.x, x3.y);
  } else {  // (g, t) (g+8, t)
    f[0] = p[g * ld + t];
    f[1] = p[(g + 8) * ld + t];
  }
}

// The B fragment of the mma tile whose top-left corner is `p` (row stride ld).
template <Mma K>
__device__ __forceinline__ void load_b(const typename MmaShape<K>::T* p, int ld, int g, int t,
                                       FragT<K> (&f)[MmaShape<K>::kBRegs]) {
  if constexpr (K == Mma::kTf32) {  // (t, g) (t+4, g)
    const float* q = p + t * ld + g;
    f[0] = to_tf32(q[0]);
    f[1] = to_tf32(q[4 * ld]);
  } else if constexpr (K == Mma::kBf16) {  // pairs (2t..2t+1, g) (2t+8..2t+9, g)
    const float* q = p + 2 * t * ld + g;
    f[0] = to_bf16x2(q[0], q[ld]);
    f[1] = to_bf16x2(q[8 * ld], q[9 * ld]);
  } else {  // (t, g)
    f[0] = p[t * ld + g];
  }
}

template <Mma KIND, int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, int PAD_A, int PAD_B, int MIN_BLOCKS_>
struct TcConfig {
  using Shape = MmaShape<KIND>;
  using T = typename Shape::T;
  static constexpr Mma kKind = KIND;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int kMinBlocks = MIN_BLOCKS_;
  static constexpr int MT = WM / Shape::kM, NT = WN / Shape::kN;  // mma tiles per warp
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int W = Vec<T>::kWidth;
  static constexpr int kLdA = BK + PAD_A, kLdB = BN + PAD_B;
  static constexpr int kStageElems = BM * kLdA + BK * kLdB;
  static constexpr std::size_t kSmemBytes = std::size_t{STAGES} * kStageElems * sizeof(T);

  static_assert(BM % WM == 0 && BN % WN == 0, "tensorcore: warp tiles divide the block tile");
  static_assert(WM % Shape::kM == 0 && WN % Shape::kN == 0 && BK % Shape::kK == 0,
                "tensorcore: mma tiles divide the warp tile and the k block");
  static_assert(kThreads <= 1024, "tensorcore: at most 1024 threads per block");
  static_assert((kLdA * sizeof(T)) % 16 == 0 && (kLdB * sizeof(T)) % 16 == 0,
                "tensorcore: padded rows stay 16-byte aligned for cp.async");
  static_assert(BK % W == 0 && BN % W == 0, "tensorcore: tiles are whole 16-byte chunks");
  static_assert(STAGES >= 2, "tensorcore: at least double buffering");
  static_assert((BM * kLdA * sizeof(T)) % 16 == 0 && (kStageElems * sizeof(T)) % 16 == 0,
                "tensorcore: the B tile and every stage start on 16-byte boundaries");
  static_assert(kSmemBytes <= 227 * 1024, "tensorcore: the stages fit an SM's shared memory");
};

template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    tensorcore_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const typename Cfg::T* __restrict__ a,
                           const typename Cfg::T* __restrict__ b, typename Cfg::T* __restrict__ c, bool vec_c) {
  using T = typename Cfg::T;
  using Shape = typename Cfg::Shape;
  constexpr Mma K = Cfg::kKind;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, W = Cfg::W, STAGES = Cfg::STAGES;
  constexpr int kThreads = Cfg::kThreads, kLdA = Cfg::kLdA, kLdB = Cfg::kLdB;
  constexpr int MT = Cfg::MT, NT = Cfg::NT;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;  // the mma fragment coordinates of this lane
  const int warp_m0 = (warp / Cfg::kWarpsN) * Cfg::WM, warp_n0 = (warp % Cfg::kWarpsN) * Cfg::WN;
  const std::int64_t k_blocks = ceil_div(k, BK);

  // What this thread copies per k block: A rows a_row + j * kARowStep at k offset a_k (chunks
  // of kAWidth elements), B rows b_row + j * kBRowStep at column b_col (chunks of kBWidth).
  // With VEC_A (k % W == 0, aligned rows) and VEC_B (n % W == 0) a 16-byte chunk is all inside
  // or all outside the matrix.
  constexpr int kAWidth = VEC_A ? W : 1, kBWidth = VEC_B ? W : 1;
  constexpr int kAChunksPerRow = BK / kAWidth, kBChunksPerRow = BN / kBWidth;
  constexpr int kARowStep = kThreads / kAChunksPerRow, kARows = BM / kARowStep;
  constexpr int kBRowStep = kThreads / kBChunksPerRow, kBRows = BK / kBRowStep;
  static_assert(kThreads % kAChunksPerRow == 0 && BM % kARowStep == 0,
                "tensorcore: A rows are split evenly over the threads");
  static_assert(kThreads % kBChunksPerRow == 0 && BK % kBRowStep == 0,
                "tensorcore: B rows are split evenly over the threads");
  const int a_row = tid / kAChunksPerRow, a_k = (tid % kAChunksPerRow) * kAWidth;
  const int b_row = tid / kBChunksPerRow, b_col = (tid % kBChunksPerRow) * kBWidth;

  for_each_tile(m, n, BM, BN, [&](std::int64_t tile_m, std::int64_t tile_n) {
    const std::int64_t row0 = tile_m * BM, col0 = tile_n * BN;
    bool a_row_ok[kARows], b_col_ok;
    const T *a_src, *b_src;
    tile_copy_origin<kARows, kARowStep>(a_row_ok, b_col_ok, a_src, b_src, a, b, m, n, k, row0, col0, a_row, a_k, b_row,
                                        b_col);

    auto load_stage = [&](int stage, std::int64_t kb) {
      T* const As = smem + stage * Cfg::kStageElems;
      T* const Bs = As + BM * kLdA;
      const std::int64_t k0 = kb * BK;
      const bool a_k_ok = k0 + a_k < k;
#pragma unroll
      for (int j = 0; j < kARows; ++j) {
        const bool ok = a_k_ok && a_row_ok[j];
        const T* src = a_src + std::int64_t{j * kARowStep} * k + k0;
        cp_async<kAWidth * sizeof(T)>(&As[(a_row + j * kARowStep) * kLdA + a_k], ok ? src : a, ok);
      }
#pragma unroll
      for (int j = 0; j < kBRows; ++j) {
        const bool ok = b_col_ok && k0 + b_row + j * kBRowStep < k;
        const T* src = b_src + (k0 + j * kBRowStep) * n;
        cp_async<kBWidth * sizeof(T)>(&Bs[(b_row + j * kBRowStep) * kLdB + b_col], ok ? src : b, ok);
      }
    };

    T acc[MT][NT][Shape::kCRegs] = {};
    cp_async_pipeline<STAGES>(k_blocks, load_stage, [&](int stage) {
      const T* const As = smem + stage * Cfg::kStageElems;
      const T* const Bs = As + BM * kLdA;
#pragma unroll
      for (int kk = 0; kk < BK; kk += Shape::kK) {
        FragT<K> af[MT][Shape::kARegs], bf[NT][Shape::kBRegs];
#pragma unroll
        for (int i = 0; i < MT; ++i) load_a<K>(As + (warp_m0 + i * Shape::kM) * kLdA + kk, kLdA, g, t, af[i]);
#pragma unroll
        for (int j = 0; j < NT; ++j) load_b<K>(Bs + kk * kLdB + warp_n0 + j * Shape::kN, kLdB, g, t, bf[j]);
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT; ++j) mma(acc[i][j], af[i], bf[j], Shape{});
      }
    });

    // Accumulator fragment (every shape is m16n8): pairs (g, 2t..2t+1) and (g + 8, 2t..2t+1).
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const std::int64_t r = row0 + warp_m0 + i * Shape::kM + g;
        const std::int64_t col = col0 + warp_n0 + j * Shape::kN + 2 * t;
        store_pair<ACCUMULATE>(c, m, n, r, col, acc[i][j][0], acc[i][j][1], vec_c);
        store_pair<ACCUMULATE>(c, m, n, r + 8, col, acc[i][j][2], acc[i][j][3], vec_c);
      }
  });
}

template <class Cfg, bool VEC_A, bool VEC_B, bool ACCUMULATE>
void launch_tc(const GpuGemm& g, bool vec_c) {
  using T = typename Cfg::T;
  const auto kernel = &tensorcore_gemm_kernel<Cfg, VEC_A, VEC_B, ACCUMULATE>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes);
  kernel<<<tile_grid(g.m, g.n, Cfg::BM, Cfg::BN), Cfg::kThreads, Cfg::kSmemBytes, g.stream>>>(
      g.m, g.n, g.k, static_cast<const T*>(g.a), static_cast<const T*>(g.b), static_cast<T*>(g.c), vec_c);
  CUDA_CHECK_LAUNCH();
}

template <class Cfg>
void run_tc(const GpuGemm& g, GpuContext&) {
  using T = typename Cfg::T;
  constexpr int W = Cfg::W;
  // 16-byte copies need 16-byte-aligned rows; pair accesses of C need 2-element alignment.
  const bool vec_a = g.k % W == 0 && is_aligned(g.a, 16);
  const bool vec_b = g.n % W == 0 && is_aligned(g.b, 16);
  const bool vec_c = g.n % 2 == 0 && is_aligned(g.c, 2 * sizeof(T));
  static_switch(
      [&](auto vec_a_, auto vec_b_, auto accumulate) { launch_tc<Cfg, vec_a_(), vec_b_(), accumulate()>(g, vec_c); },
      vec_a, vec_b, g.accumulate);
}

bool f64_only(const GpuGemm& g, std::string* why) {
  if (g.dtype == DType::f64) return true;
  if (why) *why = "dmma is the float64 tensor-core kernel; float32 takes tf32/bf16 or the FFMA kernels";
  return false;
}

//                         kind        BM   BN  BK  WM  WN STAGES PAD_A PAD_B MIN_BLOCKS
using Tf32Cfg = TcConfig<Mma::kTf32, 128, 128, 32, 64, 64, 3, 4, 8, 2>;        // 128 threads
using Bf16Cfg = TcConfig<Mma::kBf16, 128, 128, 32, 64, 64, 3, 8, 4, 2>;        // 128 threads
using DmmaCfg = TcConfig<Mma::kF64, 128, 64, 16, 64, 32, 3, 4, 4, 2>;          // 128 threads
using Dmma128x128Cfg = TcConfig<Mma::kF64, 128, 128, 16, 64, 32, 3, 4, 4, 1>;  // 256 threads
using Dmma64x64Cfg = TcConfig<Mma::kF64, 64, 64, 16, 32, 32, 4, 4, 4, 3>;      // 128 threads

}  // namespace

std::vector<GpuKernel> tensorcore_kernels() {
  constexpr double kTf32UnitRoundoff = 0x1p-11;  // 10 explicit mantissa bits, round to nearest
  constexpr double kBf16UnitRoundoff = 0x1p-8;   // 7 explicit mantissa bits
  std::vector<GpuKernel> kernels{
      {"tf32", "tensor cores, mma.sync m16n8k8: float32 rounded to TF32, FP32 accumulation (opt-in)", &f32_only,
       &run_tc<Tf32Cfg>, kTf32UnitRoundoff, true},
      {"bf16", "tensor cores, mma.sync m16n8k16: float32 rounded to BF16, FP32 accumulation (opt-in)", &f32_only,
       &run_tc<Bf16Cfg>, kBf16UnitRoundoff, true},
      {"dmma", "FP64 tensor cores, mma.sync m16n8k4, 128x64x16 tiles, 3-stage cp.async (float64 only)", &f64_only,
       &run_tc<DmmaCfg>},
      {"dmma-128x128", "FP64 tensor cores, mma.sync m16n8k4, 128x128x16 tiles, 3-stage cp.async (float64 only)",
       &f64_only, &run_tc<Dmma128x128Cfg>},
      {"dmma-64x64", "FP64 tensor cores, mma.sync m16n8k4, 64x64x16 tiles, 4-stage cp.async (float64 only)", &f64_only,
       &run_tc<Dmma64x64Cfg>},
  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;  // C += A * B in the epilogue
  return kernels;
}

}  // namespace tessera::kernels
