#pragma once
// CPU GEMM kernels, C = A * B, row-major and contiguous (lda = k, ldb = n, ldc = n).
// They know nothing of MPI, HDF5 or the CLI: pointers and sizes.
#include <cstdint>

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
