// openblas: sgemm / dgemm through the CBLAS interface (row-major) of the BLAS the build found
// (cmake/TesseraBlas.cmake): OpenBLAS by default, any vendor's CBLAS otherwise. The kernel keeps
// its name "openblas" on the command line.
#include <cblas.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cpu_gemm.hpp"

namespace tessera::kernels {

namespace {
// CBLAS takes int dimensions (LP64 interfaces): refuse what does not fit rather than wrap.
int checked(std::int64_t v) {
  if (v > static_cast<std::int64_t>(INT_MAX))
    throw std::length_error("dimension " + std::to_string(v) + " exceeds the BLAS integer range");
  return static_cast<int>(v);
}
}  // namespace

template <>
void openblas_gemm<float>(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, checked(m), checked(n), checked(k), 1.0f, a, checked(k), b,
              checked(n), 0.0f, c, checked(n));
}

template <>
void openblas_gemm<double>(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                           double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, checked(m), checked(n), checked(k), 1.0, a, checked(k), b,
              checked(n), 0.0, c, checked(n));
}

bool blas_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                    std::int64_t ldc) {
  for (const std::int64_t v : {m, n, k, lda, ldb, ldc})
    if (v < 0 || v > static_cast<std::int64_t>(INT_MAX)) return false;
  return true;
}

template <>
void blas_gemm<float>(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                      std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, checked(m),
              checked(n), checked(k), alpha, a, checked(lda), b, checked(ldb), beta, c, checked(ldc));
}

template <>
void blas_gemm<double>(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                       const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                       std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, checked(m),
              checked(n), checked(k), alpha, a, checked(lda), b, checked(ldb), beta, c, checked(ldc));
}

#ifdef TESSERA_BLAS_OPENBLAS
int openblas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
}
const char* openblas_config_string() { return openblas_get_config(); }
#else
// Other vendors have no portable way to tell their thread count (their own variables, e.g.
// OMP_NUM_THREADS or MKL_NUM_THREADS, decide it).
int openblas_threads() { return 0; }
void set_blas_threads(int) {}
const char* openblas_config_string() { return "CBLAS of " TESSERA_BLAS_NAME; }
#endif
const char* blas_name() { return TESSERA_BLAS_NAME; }

}  // namespace tessera::kernels
