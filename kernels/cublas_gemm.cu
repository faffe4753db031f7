// cuBLAS SGEMM / DGEMM: the vendor baseline the hand-written kernels are compared with (and
// the fastest choice today). The handle runs in pedantic math mode (see GpuContext), so FP32
// products really are FP32: no silent TF32, whose 10-bit mantissa would fail the accuracy
// check and make the comparison meaningless.
//
// cuBLAS is column-major; our matrices are row-major. A row-major matrix read column-major is
// its transpose, so instead of C = A * B we ask cuBLAS for C^T = B^T * A^T, which it writes
// column-major, i.e. exactly C in row-major order: gemm(n, m, k, B, ldb = n, A, lda = k,
// C, ldc = n). No transposes are performed; only the roles of the operands swap.
#include <cublas_v2.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {
namespace {

// The classic cuBLAS API takes int sizes and leading dimensions.
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

void run_cublas(const GpuGemm& g, GpuContext& ctx) {
  const CublasApi& api = cublas_api();
  cublasHandle_t handle = ctx.cublas();
  CUBLAS_CHECK(api.set_stream(handle, g.stream));
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  if (g.dtype == DType::f32) {
    const float alpha = 1, beta = g.accumulate ? 1.0f : 0.0f;
    CUBLAS_CHECK(api.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, static_cast<const float*>(g.b), n,
                           static_cast<const float*>(g.a), k, &beta, static_cast<float*>(g.c), n));
  } else {
    const double alpha = 1, beta = g.accumulate ? 1.0 : 0.0;
    CUBLAS_CHECK(api.dgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, static_cast<const double*>(g.b), n,
                           static_cast<const double*>(g.a), k, &beta, static_cast<double*>(g.c), n));
  }
}

// The opt-in tensor-core baselines, on the same float32 data as tessera's "tf32" and "bf16"
// kernels: cublasGemmEx with float32 A, B, C and a compute type that lets cuBLAS round the
// inputs to TF32 or BF16 itself (FP32 accumulation). Both run on a second handle in the default
// math mode (the first is pedantic). The BF16 path thus includes cuBLAS's own conversion of the
// float32 inputs, as tessera's bf16 kernel does; a GEMM on BF16-stored inputs (the machine
// notes' 773 TFLOP/s) skips that and is the faster ceiling.
bool cublas_tc_can_implement(const GpuGemm& g, std::string* why) {
  return f32_only(g, why) && cublas_can_implement(g, why);
}

void run_cublas_ex(const GpuGemm& g, GpuContext& ctx, cublasComputeType_t compute) {
  const CublasApi& api = cublas_api();
  cublasHandle_t handle = ctx.cublas_tensor_op();
  CUBLAS_CHECK(api.set_stream(handle, g.stream));
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const float alpha = 1, beta = g.accumulate ? 1.0f : 0.0f;
  CUBLAS_CHECK(api.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, g.b, CUDA_R_32F, n, g.a, CUDA_R_32F, k,
                           &beta, g.c, CUDA_R_32F, n, compute, CUBLAS_GEMM_DEFAULT));
}

void run_cublas_tf32(const GpuGemm& g, GpuContext& ctx) { run_cublas_ex(g, ctx, CUBLAS_COMPUTE_32F_FAST_TF32); }
void run_cublas_bf16(const GpuGemm& g, GpuContext& ctx) { run_cublas_ex(g, ctx, CUBLAS_COMPUTE_32F_FAST_16BF); }

}  // namespace

// All opt-in: `auto` and `tessera tune` choose among tessera's own kernels; cuBLAS is the
// yardstick, and a user may still name it.
std::vector<GpuKernel> cublas_kernels() {
  std::vector<GpuKernel> kernels{
      {"cublas", "cuBLAS SGEMM/DGEMM, pedantic math (no TF32)", &cublas_can_implement, &run_cublas, 0.0, true,
       "cublas"},
      {"cublas-tf32", "cuBLAS GemmEx on float32, CUBLAS_COMPUTE_32F_FAST_TF32 (opt-in baseline)",
       &cublas_tc_can_implement, &run_cublas_tf32, 0x1p-11, true, "cublas-tf32"},
      {"cublas-bf16", "cuBLAS GemmEx on float32, CUBLAS_COMPUTE_32F_FAST_16BF (opt-in baseline)",
       &cublas_tc_can_implement, &run_cublas_bf16, 0x1p-8, true, "cublas-bf16"},
  };
  for (GpuKernel& kernel : kernels) kernel.accumulates = true;  // beta = 1
  return kernels;
}

}  // namespace tessera::kernels
