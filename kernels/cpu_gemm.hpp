#pragma once
// CPU GEMM kernels, C = A * B, row-major and contiguous (lda = k, ldb = n, ldc = n).
// They know nothing of MPI, HDF5 or the CLI: pointers and sizes.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::kernels {

// The reference: one dot product per element of C, in the textbook i-j-k order.
template <class T>
void cpu_naive_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c);

// The GPU lesson's tile algorithm on the CPU (cache blocking): TILE x TILE tiles of A and B,
// phases over K, each C tile accumulated while its A and B tiles are hot in cache.
template <class T>
void cpu_tiled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c);

// cblas_sgemm / cblas_dgemm of the BLAS the build found (OpenBLAS by default; any CBLAS).
template <class T>
void openblas_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c);

// The BLAS's general GEMM on row-major operands where they lie: C = alpha op(A) op(B) + beta C,
// op(A) m x k, op(B) k x n, each stored with its own leading dimension (beta = 0: C not read).
// Throws std::length_error for a dimension or leading dimension beyond the BLAS integer range.
template <class T>
void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc);
// The same for complex elements (cblas_cgemm, cblas_zgemm): `complex_double` false for complex64
// (pairs of float), true for complex128 (pairs of double); op 'N', 'T' or 'C' (the conjugate
// transpose) per operand; alpha and beta as {real, imaginary}.
void blas_complex_gemm(bool complex_double, char op_a, char op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       const double alpha[2], const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
                       const double beta[2], void* c, std::int64_t ldc);
// Whether blas_gemm takes these sizes (all within the BLAS integer range).
bool blas_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                    std::int64_t ldc);

// A CPU kernel of the registry (kernels/cpu_registry.cpp): its name (--kernel), what it does, and
// its float32 and float64 entry points. The first is the CPU backend's default.
struct CpuKernel {
  const char* name;
  const char* summary;
  bool vendor;  // the BLAS library's call: what `tessera bench` compares the others with
  void (*f32)(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c);
  void (*f64)(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b, double* c);
  template <class T>
  void run(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) const {
    if constexpr (sizeof(T) == 4)
      f32(m, n, k, a, b, c);
    else
      f64(m, n, k, a, b, c);
  }
};
// Every CPU kernel, the default first.
const std::vector<CpuKernel>& cpu_kernels();
// The kernel of that name; nullptr for none.
const CpuKernel* find_cpu_kernel(const std::string& name);
std::vector<std::string> cpu_kernel_names();

// Threads OpenBLAS uses (openblas_get_num_threads); 0 where the BLAS is another (unknown).
int openblas_threads();
// Asks OpenBLAS for `threads` threads (e.g. once the process may use more cores than at start);
// nothing for another BLAS, whose own variables decide.
void set_blas_threads(int threads);
// OpenBLAS's build configuration, or a line naming the other BLAS.
const char* openblas_config_string();
// The BLAS linked: "OpenBLAS", or the BLA_VENDOR it was found with (e.g. "Generic").
const char* blas_name();

}  // namespace tessera::kernels
