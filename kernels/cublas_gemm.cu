// cuBLAS: the baselines the hand-written kernels are compared with, each one cublasGemmEx call
// whose data and compute types are named explicitly, on the context's handle in the default math
// mode (GpuContext::cublas). The compute type alone decides whether the inputs are rounded:
//   "cublas"              float32: CUBLAS_COMPUTE_32F, FP32 throughout (TF32 would need
//                         CUBLAS_COMPUTE_32F_FAST_TF32 or a handle in CUBLAS_TF32_TENSOR_OP_MATH;
//                         tessera bench's 1e-5 tolerance would catch TF32's 2.6e-4 error).
//                         float64: CUBLAS_COMPUTE_64F, IEEE FP64 on the FP64 tensor cores (FP64
//                         has no reduced-precision mode). Full precision: a candidate for `auto`.
//   "cublas-tf32"         float32 data, CUBLAS_COMPUTE_32F_FAST_TF32 (opt-in): cuBLAS rounds the
//                         inputs itself. TF32 has no storage format of its own (a float32 with 13
//                         mantissa bits unused), so this one call is both the "stored" and the
//                         "with a rounding pass" TF32 baseline.
//   "cublas-bf16"         float32 data (opt-in): a pass rounds A and B to BF16 (to nearest) into
//                         the context's operand scratch, then the BF16 GEMM below: what a cuBLAS
//                         user with float32 data does for BF16 speed, and the baseline of
//                         tessera's bf16 kernels, which take float32 data and round it too.
//   "cublas-f16"          float32 data (opt-in): the same with IEEE FP16 (CUDA_R_16F, FP32
//                         accumulation); values beyond FP16's range (65504) become Inf. What `auto`
//                         runs for A and B stored as float16 (job plan: the rounding is then exact),
//                         as "cublas-bf16" for bfloat16 data: the tensor cores at no loss.
//   "cublas-bf16-stored"  A and B already stored as BF16 (GpuGemm::inputs, opt-in): the BF16
//                         GEMM alone (CUDA_R_16BF inputs, CUBLAS_COMPUTE_32F, float32 C), cuBLAS's
//                         BF16 ceiling. tessera's own kernels never get BF16 data, so it is reported
//                         beside them, not compared with them (tessera bench).
// Pedantic math (the old baseline) cost DGEMM about a quarter on the H200: 47.0 / 48.6 / 50.3
// against 61.6 / 63.2 / 59.0 TFLOP/s at 4096 / 8192 / 16384, and SGEMM nothing.
//
// cuBLAS is column-major; our matrices are row-major. A row-major matrix read column-major is
// its transpose, so instead of C = A * B we ask cuBLAS for C^T = B^T * A^T, which it writes
// column-major, i.e. exactly C in row-major order: gemm(n, m, k, B, ldb = n, A, lda = k,
// C, ldc = n). No transposes are performed; only the roles of the operands swap.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {
namespace {

// ---- the rounding pass ------------------------------------------------------------------------

// out[i] = in[i] rounded to nearest (ties to even) as HALF (__nv_bfloat16 or __half), for
// i < count, grid-stride. VEC: `in` 16-byte and `out` 8-byte aligned, so four values move with one
// 16-byte load and one 8-byte store; the last count % 4 one by one.
template <class HALF>
__device__ HALF round_one(float v) {
  if constexpr (std::is_same_v<HALF, __half>)
    return __float2half_rn(v);
  else
    return __float2bfloat16_rn(v);
}
template <class HALF>
__device__ unsigned round_two(float x, float y) {
  if constexpr (std::is_same_v<HALF, __half>) {
    const __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
  }
}
template <class HALF, bool VEC>
__global__ void round_to_half_kernel(std::int64_t count, const float* __restrict__ in, HALF* __restrict__ out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  std::int64_t done = 0;
  if constexpr (VEC) {
    const std::int64_t quads = count / 4;
    for (std::int64_t q = first; q < quads; q += stride) {
      const float4 v = reinterpret_cast<const float4*>(in)[q];
      uint2 bits;
      bits.x = round_two<HALF>(v.x, v.y);
      bits.y = round_two<HALF>(v.z, v.w);
      reinterpret_cast<uint2*>(out)[q] = bits;
    }
    done = quads * 4;
  }
  for (std::int64_t i = done + first; i < count; i += stride) out[i] = round_one<HALF>(in[i]);
}

template <class HALF>
void round_to_half(const float* in, void* out, std::int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(count, 4 * kThreads), 65535));
  static_switch(
      [&](auto vec) {
        round_to_half_kernel<HALF, vec()><<<blocks, kThreads, 0, stream>>>(count, in, static_cast<HALF*>(out));
      },
      is_aligned(in, 16) && is_aligned(out, 8));
  CUDA_CHECK_LAUNCH();
}

// ---- the calls ----------------------------------------------------------------------------------

// The types of one cublasGemmEx call: A and B as stored, C, and the compute type.
struct Call {
  cudaDataType inputs;
  cudaDataType output;
  cublasComputeType_t compute;
};
constexpr Call kFp32{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
constexpr Call kFp64{CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
constexpr Call kTf32{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
constexpr Call kBf16{CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
constexpr Call kF16{CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};

// The one place cuBLAS is called: C = A * B (C += A * B with g.accumulate: beta = 1), with `a`
// and `b` stored as call.inputs. alpha and beta have the compute type's precision.
void gemm_ex(const GpuGemm& g, GpuContext& ctx, const void* a, const void* b, const Call& call) {
  const CublasApi& api = cublas_api();
  cublasHandle_t handle = ctx.cublas();
  CUBLAS_CHECK(api.set_stream(handle, g.stream));
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const double alpha64 = 1, beta64 = g.accumulate ? 1 : 0;
  const float alpha32 = 1, beta32 = g.accumulate ? 1.0f : 0.0f;
  const bool f64 = call.compute == CUBLAS_COMPUTE_64F;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : static_cast<const void*>(&alpha32);
  const void* beta = f64 ? static_cast<const void*>(&beta64) : static_cast<const void*>(&beta32);
  CUBLAS_CHECK(api.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, b, call.inputs, n, a, call.inputs, k, beta,
                           g.c, call.output, n, call.compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B's role first, each operand's
// op unchanged (a row-major X read column-major is X^T, and (X^H)^T is conj(X) = (X^T)^H).
void gpu_complex_gemm(const GpuComplexGemm& g, GpuContext& ctx) {
  for (const std::int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc})
    if (v < 0 || v > static_cast<std::int64_t>(INT_MAX))
      throw std::length_error("cublas takes sizes and leading dimensions below 2^31; got " + std::to_string(v));
  if (g.m == 0 || g.n == 0) return;
  const CublasApi& api = cublas_api();
  cublasHandle_t handle = ctx.cublas();
  CUBLAS_CHECK(api.set_stream(handle, g.stream));
  const auto op = [](char o) { return o == 'C' ? CUBLAS_OP_C : o == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const bool wide = g.dtype == DType::c128;
  const cudaDataType type = wide ? CUDA_C_64F : CUDA_C_32F;
  const cublasComputeType_t compute = wide ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const float alpha32[2] = {static_cast<float>(g.alpha[0]), static_cast<float>(g.alpha[1])};
  const float beta32[2] = {static_cast<float>(g.beta[0]), static_cast<float>(g.beta[1])};
  const void* alpha = wide ? static_cast<const void*>(g.alpha) : static_cast<const void*>(alpha32);
  const void* beta = wide ? static_cast<const void*>(g.beta) : static_cast<const void*>(beta32);
  const auto i = [](std::int64_t v) { return static_cast<int>(std::max<std::int64_t>(v, 1)); };
  CUBLAS_CHECK(api.gemm_ex(handle, op(g.op_b), op(g.op_a), static_cast<int>(g.n), static_cast<int>(g.m),
                           static_cast<int>(g.k), alpha, g.b, type, i(g.ldb), g.a, type, i(g.lda), beta, g.c, type,
                           i(g.ldc), compute, CUBLAS_GEMM_DEFAULT));
}

namespace {

// cublasGemmEx takes int sizes and leading dimensions.
bool cublas_can_implement(const GpuGemm& g, std::string* why) {
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) {
    if (why) {
      *why = "cublas takes sizes below 2^31; got " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
             std::to_string(g.k);
    }
    return false;
  }
  return true;
}

bool cublas_f32_can_implement(const GpuGemm& g, std::string* why) {
  return f32_only(g, why) && cublas_can_implement(g, why);
}

void run_cublas(const GpuGemm& g, GpuContext& ctx) { gemm_ex(g, ctx, g.a, g.b, g.dtype == DType::f32 ? kFp32 : kFp64); }
void run_cublas_tf32(const GpuGemm& g, GpuContext& ctx) { gemm_ex(g, ctx, g.a, g.b, kTf32); }
void run_cublas_bf16_stored(const GpuGemm& g, GpuContext& ctx) { gemm_ex(g, ctx, g.a, g.b, kBf16); }

// The rounding pass into the operand scratch (A, then B from a 256-byte boundary), then the 16-bit
// GEMM on the copies: 6 bytes moved per element of A and B, ~0.3 ms at 8192^3 on the H200. Where
// the copies would not fit in the memory the job left free (an out-of-core product sized to
// fill the GPU), the FP32 GEMM runs on the float32 data instead: slower, never less accurate.
template <class HALF>
void run_cublas_half(const GpuGemm& g, GpuContext& ctx) {
  const auto a_count = static_cast<std::size_t>(g.m * g.k), b_count = static_cast<std::size_t>(g.k * g.n);
  const std::size_t b_offset = (a_count * sizeof(HALF) + 255) / 256 * 256;
  if (!ctx.operand_scratch_fits(b_offset + b_count * sizeof(HALF))) return gemm_ex(g, ctx, g.a, g.b, kFp32);
  auto* const scratch = static_cast<unsigned char*>(ctx.operand_scratch(b_offset + b_count * sizeof(HALF)));
  round_to_half<HALF>(static_cast<const float*>(g.a), scratch, g.m * g.k, g.stream);
  round_to_half<HALF>(static_cast<const float*>(g.b), scratch + b_offset, g.k * g.n, g.stream);
  gemm_ex(g, ctx, scratch, scratch + b_offset, std::is_same_v<HALF, __half> ? kF16 : kBf16);
}

}  // namespace

void gpu_cublas_gemm(const GpuGemm& g, GpuContext& ctx) { run_cublas(g, ctx); }

void gpu_round_to_bf16(const float* in, void* out, std::int64_t count, cudaStream_t stream) {
  round_to_half<__nv_bfloat16>(in, out, count, stream);
}

void gpu_round_to_f16(const float* in, void* out, std::int64_t count, cudaStream_t stream) {
  round_to_half<__half>(in, out, count, stream);
}

void gpu_cublas_half_stored(const GpuGemm& g, bool bfloat16, GpuContext& ctx) {
  if (g.dtype != DType::f32) throw std::invalid_argument("gpu_cublas_half_stored: C is float32");
  std::string why;
  if (!cublas_can_implement(g, &why)) throw InputError(why);
  if (g.m == 0 || g.n == 0) return;
  gemm_ex(g, ctx, g.a, g.b, bfloat16 ? kBf16 : kF16);
}

// The full-precision "cublas" is a candidate for `auto` (on the H200 the fastest GEMM at 4096-16384);
// the reduced-precision calls are opt-in, as tessera's own tensor-core kernels are.
std::vector<GpuKernel> cublas_kernels() {
  constexpr double kTf32UnitRoundoff = 0x1p-11;  // measured: cuBLAS rounds to nearest (2.6e-4 at 8192^3)
  constexpr double kBf16UnitRoundoff = 0x1p-8;
  constexpr double kF16UnitRoundoff = 0x1p-11;
  std::vector<GpuKernel> kernels{
      {"cublas", "cuBLAS GemmEx, CUBLAS_COMPUTE_32F (float32) or _64F (float64): full precision", &cublas_can_implement,
       &run_cublas},
      {"cublas-tf32", "cuBLAS GemmEx on float32, CUBLAS_COMPUTE_32F_FAST_TF32 (opt-in)", &cublas_f32_can_implement,
       &run_cublas_tf32, kTf32UnitRoundoff, true},
      {"cublas-bf16",
       "float32 rounded to BF16 by a pass over A and B, then cuBLAS GemmEx on BF16, FP32 accumulation (opt-in)",
       &cublas_f32_can_implement, &run_cublas_half<__nv_bfloat16>, kBf16UnitRoundoff, true},
      {"cublas-f16",
       "float32 rounded to FP16 by a pass over A and B, then cuBLAS GemmEx on FP16, FP32 accumulation (opt-in)",
       &cublas_f32_can_implement, &run_cublas_half<__half>, kF16UnitRoundoff, true},
  };
  GpuKernel stored("cublas-bf16-stored",
                   "cuBLAS GemmEx on A and B stored as BF16, FP32 accumulation: the GEMM alone (opt-in)",
                   &cublas_f32_can_implement, &run_cublas_bf16_stored, kBf16UnitRoundoff, true);
  stored.inputs = InputStorage::bf16;
  kernels.push_back(std::move(stored));
  for (GpuKernel& kernel : kernels) {
    kernel.vendor = true;
    kernel.accumulates = true;  // beta = 1
  }
  return kernels;
}

}  // namespace tessera::kernels
