// Hopper tensor cores through wgmma (sm_90a), fed by TMA, for float32 data rounded to TF32 or
// BF16 (opt-in, like tensorcore.cu's mma.sync kernels, which stay for sm_80 builds):
//   "tf32-wgmma"  wgmma m64nNk8  TF32 inputs, FP32 accumulation  (inputs rounded to 10+1 bits)
//   "tf32-wgmma-rawa"  the same without the pass over A (see RAW_A below): the fastest TF32
//   "bf16-wgmma"  wgmma m64nNk16 BF16 inputs, FP32 accumulation  (inputs rounded to 7+1 bits)
//   ("-128x128": 128x128 tiles, m64n128, 6 stages; slower on the H200 except at 1024)
//
// 1. Operands: a pass over A and B rounds them (cvt.rna to TF32, round-to-nearest to BF16) into
//    a scratch copy the GpuContext keeps: A as it is (m x k, K-major), B transposed (n x k): wgmma
//    takes TF32 only K-major, and a K-major B lets one kernel serve both formats. Rows are
//    padded to 16 bytes, which TMA needs, so every shape runs (odd K or N included); BF16 halves
//    the bytes the GEMM then reads. The pass moves 8 + 8 (TF32) or 8 + 4 (BF16) bytes per
//    element of A and B: measured at 8192^3, 0.2 ms (BF16) and 0.2-0.3 ms (TF32) next to 1.47
//    and 2.68 ms of GEMM (ncu).
// 2. TMA: one thread copies each k block of A (BM x BK) and B (BN x BK) into shared memory with
//    one instruction per tile, 128-byte swizzled (BK is one 128-byte row: 32 TF32 or 64 BF16), so
//    that wgmma reads it without bank conflicts; outside the matrices TMA writes zeros (edge tiles).
// 3. A STAGES-deep ring of stages, each with a "full" mbarrier (the TMA bytes have landed) and an
//    "empty" one (every consumer warp is done reading it). Warp specialisation: warpgroup 0 is
//    the producer (one thread issues the copies, the warpgroup gives its registers back with
//    setmaxnreg), warpgroups 1 and 2 are consumers, each computing 64 rows x BN of the block tile
//    with wgmma straight from shared memory, one k block in flight behind the one issued.
// 4. Persistent: one block per SM walks the tiles (blockIdx.x, + gridDim.x, ...) in groups of
//    kGroupM tile rows, so the blocks running at once share rows of A and columns of B in L2; the
//    producer loads the next tile while the consumers write this one's C.
//
// The epilogue writes FP32 pairs straight from the accumulators (guarded; C += when
// GpuGemm::accumulate). Sizes up to 2^31 - 1 (TMA coordinates are 32-bit).
//
// Measured against cuBLAS on the H200 (TF32, BF16 after a rounding pass, BF16-stored data, ncu's
// tensor-pipe use): docs/kernels.md. Not done: clusters with TMA multicast (half the L2 traffic
// of the shared operand), an epilogue through shared memory with TMA stores.
//
// Built only for sm_90a (CMake: TESSERA_WITH_SM90A); on another GPU the kernels fall back to
// tensorcore.cu's mma.sync "tf32"/"bf16".
#include <cuda.h>          // CUtensorMap
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/hopper.cuh"
#include "kernels/tile_copy.cuh"

namespace tessera::kernels {
namespace {

using hopper::tile_of;
using hopper::WgmmaInput;

// ---- operand formats ------------------------------------------------------------------------------

template <WgmmaInput IN>
struct Operand;
template <>
struct Operand<WgmmaInput::kTf32> {
  using E = float;  // TF32 in a 32-bit word, the 13 low mantissa bits zero
  static constexpr int kK = 8;
  static constexpr CUtensorMapDataType kTmaType = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  __device__ static E from(float x) {
    std::uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
  }
};
template <>
struct Operand<WgmmaInput::kBf16> {
  using E = __nv_bfloat16;
  static constexpr int kK = 16;
  static constexpr CUtensorMapDataType kTmaType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  __device__ static E from(float x) { return __float2bfloat16_rn(x); }
};

// Four rounded operands from four floats, stored with one 16-byte (TF32) or 8-byte (BF16) store.
template <WgmmaInput IN>
__device__ __forceinline__ void store4_rounded(typename Operand<IN>::E* dst, float4 v) {
  using Op = Operand<IN>;
  if constexpr (IN == WgmmaInput::kTf32) {
    *reinterpret_cast<float4*>(dst) = make_float4(Op::from(v.x), Op::from(v.y), Op::from(v.z), Op::from(v.w));
  } else {
    __nv_bfloat162 lo(Op::from(v.x), Op::from(v.y)), hi(Op::from(v.z), Op::from(v.w));
    uint2 bits;
    bits.x = *reinterpret_cast<const unsigned*>(&lo);
    bits.y = *reinterpret_cast<const unsigned*>(&hi);
    *reinterpret_cast<uint2*>(dst) = bits;
  }
}

// out (rows x ld) = rounded a (rows x cols, row-major), the ld - cols padding columns zero.
// VEC (cols % 4 == 0, a 16-byte aligned, so ld == cols for TF32): 16-byte loads, 4 per thread.
template <WgmmaInput IN, bool VEC>
__global__ void pack_rows(std::int64_t rows, std::int64_t cols, const float* __restrict__ a,
                          typename Operand<IN>::E* __restrict__ out, std::int64_t ld) {
  constexpr int kPerThread = 4;  // consecutive threads, consecutive elements: coalesced
  const std::int64_t span = static_cast<std::int64_t>(blockDim.x) * kPerThread;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (std::int64_t c0 = blockIdx.x * span; c0 < ld; c0 += gridDim.x * span) {
      if constexpr (VEC) {
        const std::int64_t c = c0 + kPerThread * threadIdx.x;
        if (c < cols) {
          store4_rounded<IN>(out + r * ld + c, *reinterpret_cast<const float4*>(a + r * cols + c));
        } else {
#pragma unroll
          for (int i = 0; i < kPerThread; ++i)
            if (c + i < ld) out[r * ld + c + i] = Operand<IN>::from(0.0f);
        }
      } else {
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
          const std::int64_t c = c0 + i * blockDim.x + threadIdx.x;
          if (c < ld) out[r * ld + c] = Operand<IN>::from(c < cols ? a[r * cols + c] : 0.0f);
        }
      }
    }
}

// out (cols x ld) = rounded b^T, b (rows x cols, row-major), the ld - rows padding columns zero:
// 32 x 32 tiles through shared memory so that reads and writes are both coalesced; the +1
// column avoids bank conflicts.
template <WgmmaInput IN>
__global__ void pack_transposed(std::int64_t rows, std::int64_t cols, const float* __restrict__ b,
                                typename Operand<IN>::E* __restrict__ out, std::int64_t ld) {
  constexpr int kTile = 32, kRowsPerPass = 8;  // blockDim (32, 8)
  __shared__ float tile[kTile][kTile + 1];
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  for (std::int64_t tr = blockIdx.y; tr * kTile < ld; tr += gridDim.y)
    for (std::int64_t tc = blockIdx.x; tc * kTile < cols; tc += gridDim.x) {
#pragma unroll
      for (int i = y; i < kTile; i += kRowsPerPass) {
        const std::int64_t r = tr * kTile + i, c = tc * kTile + x;
        tile[i][x] = r < rows && c < cols ? b[r * cols + c] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int i = y; i < kTile; i += kRowsPerPass) {
        const std::int64_t r = tc * kTile + i, c = tr * kTile + x;                // out row = b column
        if (r < cols && c < ld) out[r * ld + c] = Operand<IN>::from(tile[x][i]);  // zero past b's rows
      }
      // Everyone has read the tile before the next one overwrites it.
      __syncthreads();
    }
}

// ---- the GEMM ----------------------------------------------------------------------------------

// RAW_A (TF32 only): A is read by TMA straight from the caller's float32 matrix when its rows
// are 16-byte aligned, with no rounding pass, through a tensor map of type TFLOAT32. The
// declared bound assumes the worst, truncation to TF32 (u_in 2^-10 instead of 2^-11); measured,
// the error equals that of the rounding pass (2.6177e-4 at 8192^3, where truncation would give
// >= 4.9e-4): the copy engine rounds to nearest. B is still rounded by the pass.
template <WgmmaInput IN, int BN_, int STAGES_, bool RAW_A_ = false>
struct WgmmaConfig {
  using Op = Operand<IN>;
  using E = typename Op::E;
  static constexpr WgmmaInput kInput = IN;
  static constexpr bool kRawA = RAW_A_;
  static_assert(!RAW_A_ || IN == WgmmaInput::kTf32, "wgmma: only TF32 reads float32 A as it is");
  static constexpr int kConsumers = 2;  // warpgroups computing, 64 rows each
  static constexpr int BM = 64 * kConsumers, BN = BN_;
  static constexpr int BK = 128 / static_cast<int>(sizeof(E));  // one 128-byte swizzle row
  static constexpr int STAGES = STAGES_;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kGroupM = 16;  // tile rows walked together (L2 reuse)
  static constexpr std::uint32_t kABytes = BM * BK * sizeof(E), kBBytes = BN * BK * sizeof(E);
  static constexpr std::uint32_t kStageBytes = kABytes + kBBytes;
  static constexpr std::size_t kSmemBytes = std::size_t{STAGES} * kStageBytes + 1024;  // + alignment
  static constexpr int kAccum = BN / 2;  // FP32 accumulators per consumer thread

  static_assert(BN % 8 == 0 && BN <= 256, "wgmma: N is a multiple of 8, at most 256 (and the TMA box)");
  static_assert(BK % Op::kK == 0, "wgmma: whole instructions per k block");
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0,
                "wgmma: every tile starts on a 1024-byte boundary (the 128-byte swizzle's period)");
  static_assert(kSmemBytes <= 227 * 1024, "wgmma: the stages fit an SM's shared memory");
};

template <class Cfg, bool ACCUMULATE>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      std::int64_t m, std::int64_t n, std::int64_t k, float* __restrict__ c, bool vec_c) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) std::uint64_t full[STAGES], empty[STAGES];
  // The 128-byte swizzle repeats every 1024 bytes: tiles start on such a boundary.
  unsigned char* const smem = smem_raw + ((1024 - hopper::smem_addr(smem_raw) % 1024) % 1024);
  auto a_tile = [&](int stage) { return smem + stage * Cfg::kStageBytes; };
  auto b_tile = [&](int stage) { return smem + stage * Cfg::kStageBytes + Cfg::kABytes; };

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      hopper::mbar_init(&full[s], 1);                     // the producer's arrive + TMA bytes
      hopper::mbar_init(&empty[s], Cfg::kConsumers * 4);  // one arrival per consumer warp
    }
    hopper::mbar_fence_init();
  }
  __syncthreads();

  const std::int64_t tiles_m = ceil_div(m, BM), tiles_n = ceil_div(n, BN);
  const std::int64_t tiles = tiles_m * tiles_n, k_blocks = ceil_div(k, BK);

  if (warpgroup == 0) {  // producer
    hopper::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      std::uint32_t phase = 0;
      for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        std::int64_t tm, tn;
        tile_of<Cfg::kGroupM>(t, tiles_m, tiles_n, tm, tn);
        for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
          hopper::mbar_wait(&empty[stage], phase ^ 1);  // the consumers are done with it
          hopper::mbar_arrive_expect_tx(&full[stage], Cfg::kStageBytes);
          const auto k0 = static_cast<std::int32_t>(kb * BK);
          hopper::tma_load_2d(a_tile(stage), &map_a, k0, static_cast<std::int32_t>(tm * BM), &full[stage]);
          hopper::tma_load_2d(b_tile(stage), &map_b, k0, static_cast<std::int32_t>(tn * BN), &full[stage]);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {  // consumers
    hopper::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = (static_cast<int>(threadIdx.x) % 128) / 32;
    constexpr int kSteps = BK / Cfg::Op::kK;
    constexpr int kStepBytes = Cfg::Op::kK * static_cast<int>(sizeof(typename Cfg::E));  // 32
    int stage = 0;
    std::uint32_t phase = 0;
    float acc[Cfg::kAccum] = {};  // each tile's first wgmma overwrites it (scale-d = 0)
    for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      std::int64_t tm, tn;
      tile_of<Cfg::kGroupM>(t, tiles_m, tiles_n, tm, tn);
      int released = -1;  // the stage whose wgmma are still running, released after the next
      for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
        hopper::mbar_wait(&full[stage], phase);
        const std::uint64_t desc_a = hopper::desc_k_major_sw128(a_tile(stage) + consumer * 64 * 128);
        const std::uint64_t desc_b = hopper::desc_k_major_sw128(b_tile(stage));
        hopper::fence_registers(acc);
        hopper::wgmma_fence();
#pragma unroll
        for (int s = 0; s < kSteps; ++s)  // + 32 bytes of k: + 2 in the descriptor's 16-byte units
          hopper::wgmma<Cfg::kInput, BN>(acc, desc_a + s * (kStepBytes / 16), desc_b + s * (kStepBytes / 16),
                                         kb > 0 || s > 0);
        hopper::wgmma_commit();
        // The previous k block's wgmma are done: its stage may be refilled.
        hopper::wgmma_wait<1>();
        hopper::fence_registers(acc);
        if (released >= 0 && lane == 0) hopper::mbar_arrive(&empty[released]);
        released = stage;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
      hopper::wgmma_wait<0>();
      hopper::fence_registers(acc);
      if (lane == 0) hopper::mbar_arrive(&empty[released]);

      const std::int64_t r = tm * BM + consumer * 64 + warp * 16 + lane / 4;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const std::int64_t col = tn * BN + 8 * j + 2 * (lane % 4);
        store_pair<ACCUMULATE>(c, m, n, r, col, acc[4 * j], acc[4 * j + 1], vec_c);
        store_pair<ACCUMULATE>(c, m, n, r + 8, col, acc[4 * j + 2], acc[4 * j + 3], vec_c);
      }
    }
  }
}

// ---- host side ---------------------------------------------------------------------------------

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn)
      throw DeviceError("the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The 2-D tensor `rows` x `cols` (row stride ld elements) at `base`, read in boxes of
// box_rows x box_cols with 128-byte swizzling; zeros outside.
CUtensorMap tensor_map(CUtensorMapDataType type, std::size_t elem, const void* base, std::int64_t rows,
                       std::int64_t cols, std::int64_t ld, int box_rows, int box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * elem};  // bytes, dimension 1
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult res = tensor_map_encoder()(&map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS)
    throw DeviceError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(res)) + ") for a " +
                      std::to_string(rows) + " x " + std::to_string(cols) + " operand");
  return map;
}

// sm_90a machine code runs on compute capability 9.0 only.
bool device_is_sm90() {
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

template <class Cfg>
void run_wgmma(const GpuGemm& g, GpuContext& ctx) {
  using E = typename Cfg::E;
  if (!device_is_sm90()) {  // not a Hopper GPU: the portable mma.sync kernel of the same format
    gpu_gemm(Cfg::kInput == WgmmaInput::kTf32 ? "tf32" : "bf16", g, ctx);
    return;
  }
  // 1. The operands, rounded, B transposed, rows padded to 16 bytes for TMA.
  constexpr std::int64_t kPad = 16 / sizeof(E);
  const std::int64_t ld = ceil_div(g.k, kPad) * kPad;
  const bool vec_a = g.k % 4 == 0 && is_aligned(g.a, 16);
  const bool raw_a = Cfg::kRawA && vec_a;  // ld == k: A's rows are whole 16-byte units
  const std::size_t a_bytes = raw_a ? 0 : static_cast<std::size_t>(g.m * ld) * sizeof(E);
  const std::size_t b_offset = (a_bytes + 255) / 256 * 256;
  auto* const scratch =
      static_cast<unsigned char*>(ctx.operand_scratch(b_offset + static_cast<std::size_t>(g.n * ld) * sizeof(E)));
  const E* a_op = raw_a ? static_cast<const E*>(g.a) : reinterpret_cast<E*>(scratch);
  E* const b_op = reinterpret_cast<E*>(scratch + b_offset);
  if (!raw_a) {
    constexpr int kThreads = 256;
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(ceil_div(ld, 4 * kThreads), 1024)),
                    static_cast<unsigned>(std::min<std::int64_t>(g.m, kMaxGridY)));
    static_switch(
        [&](auto vec) {
          pack_rows<Cfg::kInput, vec()><<<grid, kThreads, 0, g.stream>>>(g.m, g.k, static_cast<const float*>(g.a),
                                                                         reinterpret_cast<E*>(scratch), ld);
        },
        vec_a);
    CUDA_CHECK_LAUNCH();
  }
  {
    const dim3 tgrid(static_cast<unsigned>(std::min<std::int64_t>(ceil_div(g.n, 32), kMaxGridX)),
                     static_cast<unsigned>(std::min<std::int64_t>(ceil_div(ld, 32), kMaxGridY)));
    pack_transposed<Cfg::kInput>
        <<<tgrid, dim3(32, 8), 0, g.stream>>>(g.k, g.n, static_cast<const float*>(g.b), b_op, ld);
    CUDA_CHECK_LAUNCH();
  }
  // 2. The GEMM on them. The padded width as the tensor's: rows of whole 16-byte units, the
  // padding zeros. A raw float32 A is described as TF32 (the tensor cores read 19 of its bits).
  const CUtensorMapDataType a_type = raw_a ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : Cfg::Op::kTmaType;
  const CUtensorMap map_a = tensor_map(a_type, sizeof(E), a_op, g.m, ld, ld, Cfg::BM, Cfg::BK);
  const CUtensorMap map_b = tensor_map(Cfg::Op::kTmaType, sizeof(E), b_op, g.n, ld, ld, Cfg::BN, Cfg::BK);
  const bool vec_c = g.n % 2 == 0 && is_aligned(g.c, 8);
  const std::int64_t tiles = ceil_div(g.m, Cfg::BM) * ceil_div(g.n, Cfg::BN);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(tiles, multiprocessors()));
  static_switch(
      [&](auto accumulate) {
        const auto kernel = &wgmma_gemm_kernel<Cfg, accumulate()>;
        allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes);
        kernel<<<blocks, Cfg::kThreads, Cfg::kSmemBytes, g.stream>>>(map_a, map_b, g.m, g.n, g.k,
                                                                     static_cast<float*>(g.c), vec_c);
        CUDA_CHECK_LAUNCH();
      },
      g.accumulate);
}

bool wgmma_can_implement(const GpuGemm& g, std::string* why) {
  if (!f32_only(g, why)) return false;
  constexpr std::int64_t kMax = 2147483647;  // TMA coordinates are 32-bit
  if (g.m <= kMax && g.n <= kMax && g.k <= kMax) return true;
  if (why) *why = "wgmma kernels take sizes below 2^31 (TMA coordinates are 32-bit)";
  return false;
}

//                            input               BN   STAGES
using Tf32x256 = WgmmaConfig<WgmmaInput::kTf32, 256, 4>;
using Tf32x128 = WgmmaConfig<WgmmaInput::kTf32, 128, 6>;
using Tf32x256RawA = WgmmaConfig<WgmmaInput::kTf32, 256, 4, true>;
using Bf16x256 = WgmmaConfig<WgmmaInput::kBf16, 256, 4>;
using Bf16x128 = WgmmaConfig<WgmmaInput::kBf16, 128, 6>;

}  // namespace

std::vector<GpuKernel> wgmma_kernels() {
  constexpr double kTf32UnitRoundoff = 0x1p-11;
  constexpr double kBf16UnitRoundoff = 0x1p-8;
  std::vector<GpuKernel> kernels{
      {"tf32-wgmma",
       "Hopper wgmma m64n256k8 + TMA, 128x256x32 tiles, 4 stages, warp-specialised, persistent: "
       "float32 rounded to TF32, FP32 accumulation (opt-in, sm_90a)",
       &wgmma_can_implement, &run_wgmma<Tf32x256>, kTf32UnitRoundoff, true},
      {"tf32-wgmma-rawa",
       "tf32-wgmma without the rounding pass over A when its rows are 16-byte aligned: A's floats "
       "truncated to TF32 by the tensor cores, B rounded (opt-in, sm_90a)",
       &wgmma_can_implement, &run_wgmma<Tf32x256RawA>, 0x1p-10, true},
      {"tf32-wgmma-128x128", "Hopper wgmma m64n128k8 + TMA, 128x128x32 tiles, 6 stages (opt-in, sm_90a)",
       &wgmma_can_implement, &run_wgmma<Tf32x128>, kTf32UnitRoundoff, true},
      {"bf16-wgmma",
       "Hopper wgmma m64n256k16 + TMA, 128x256x64 tiles, 4 stages, warp-specialised, persistent: "
       "float32 rounded to BF16, FP32 accumulation (opt-in, sm_90a)",
       &wgmma_can_implement, &run_wgmma<Bf16x256>, kBf16UnitRoundoff, true},
      {"bf16-wgmma-128x128", "Hopper wgmma m64n128k16 + TMA, 128x128x64 tiles, 6 stages (opt-in, sm_90a)",
       &wgmma_can_implement, &run_wgmma<Bf16x128>, kBf16UnitRoundoff, true},
  };
  for (GpuKernel& kernel : kernels) {
    kernel.accumulates = true;  // C += A * B in the epilogue
    kernel.needs_sm90a = true;
  }
  return kernels;
}

}  // namespace tessera::kernels
