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

// OpenBLAS sgemm / dgemm.
template <class T>
void openblas_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c);

// Threads OpenBLAS uses (openblas_get_num_threads).
int openblas_threads();
const char* openblas_config_string();

}  // namespace tessera::kernels
