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

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {
namespace {

// The classic cuBLAS API takes int sizes and leading dimensions.
bool cublas_can_implement(const GpuGemm& g, std::string* why) {
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) {
    if (why) {
      *why = "cublas takes sizes below 2^31; got " + std::to_string(g.m) + "x" +
             std::to_string(g.n) + "x" + std::to_string(g.k);
    }
    return false;
  }
  return true;
}

void run_cublas(const GpuGemm& g, GpuContext& ctx) {
  cublasHandle_t handle = ctx.cublas();
  CUBLAS_CHECK(cublasSetStream(handle, g.stream));
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  if (g.dtype == DType::f32) {
    const float alpha = 1, beta = 0;
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                             static_cast<const float*>(g.b), n, static_cast<const float*>(g.a), k,
                             &beta, static_cast<float*>(g.c), n));
  } else {
    const double alpha = 1, beta = 0;
    CUBLAS_CHECK(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                             static_cast<const double*>(g.b), n, static_cast<const double*>(g.a),
                             k, &beta, static_cast<double*>(g.c), n));
  }
}

}  // namespace

std::vector<GpuKernel> cublas_kernels() {
  return {{"cublas", "cuBLAS SGEMM/DGEMM, pedantic math (no TF32)", &cublas_can_implement,
           &run_cublas}};
}

}  // namespace tessera::kernels
