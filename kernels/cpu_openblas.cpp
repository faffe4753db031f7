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

bool blas_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                    std::int64_t ldc) {
  for (const std::int64_t v : {m, n, k, lda, ldb, ldc})
    if (v < 0 || v > static_cast<std::int64_t>(INT_MAX)) return false;
  return true;
}

template <class T>
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(CblasRowMajor, ta, tb, checked(m), checked(n), checked(k), alpha, a, checked(lda), b, checked(ldb),
                beta, c, checked(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, checked(m), checked(n), checked(k), alpha, a, checked(lda), b, checked(ldb),
                beta, c, checked(ldc));
}
template void blas_gemm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                               const float*, std::int64_t, float, float*, std::int64_t);
template void blas_gemm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const double*,
                                std::int64_t, const double*, std::int64_t, double, double*, std::int64_t);

void blas_complex_gemm(bool complex_double, char op_a, char op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       const double alpha[2], const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
                       const double beta[2], void* c, std::int64_t ldc) {
  const auto op = [](char o) { return o == 'C' ? CblasConjTrans : o == 'T' ? CblasTrans : CblasNoTrans; };
  if (complex_double) {
    cblas_zgemm(CblasRowMajor, op(op_a), op(op_b), checked(m), checked(n), checked(k), alpha, a, checked(lda), b,
                checked(ldb), beta, c, checked(ldc));
  } else {
    const float alpha32[2] = {static_cast<float>(alpha[0]), static_cast<float>(alpha[1])};
    const float beta32[2] = {static_cast<float>(beta[0]), static_cast<float>(beta[1])};
    cblas_cgemm(CblasRowMajor, op(op_a), op(op_b), checked(m), checked(n), checked(k), alpha32, a, checked(lda), b,
                checked(ldb), beta32, c, checked(ldc));
  }
}

// The registry's kernel: C = A * B, all three packed.
template <class T>
void openblas_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  blas_gemm<T>(false, false, m, n, k, T(1), a, k, b, n, T(0), c, n);
}
template void openblas_gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, const float*, float*);
template void openblas_gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, const double*, double*);

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
