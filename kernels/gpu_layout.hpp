#pragma once
// Layout steps on device memory around a GEMM of matrices a caller already holds on the GPU
// (issue 42: arrays used in place): the registry's kernels (gpu_gemm.hpp) multiply packed
// row-major A and B into a packed C, so a transposed or strided operand is packed first, and
// C = alpha T + beta C is applied after, into a C of any leading dimension. Each call enqueues on
// `stream` and returns. Knows nothing of MPI, HDF5 or the CLI.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"

namespace tessera::kernels {

// dst (cols x rows, packed) = the transpose of src (rows x cols, rows `ld` elements apart).
void gpu_transpose(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, std::int64_t ld, void* dst,
                   cudaStream_t stream);

// c (rows x cols, rows `ldc` apart) = alpha t + beta c, t packed (rows x cols); t may be c where
// ldc == cols. beta = 0 does not read c (it may hold NaN).
void gpu_scale_add(DType dtype, std::int64_t rows, std::int64_t cols, double alpha, const void* t, double beta, void* c,
                   std::int64_t ldc, cudaStream_t stream);

// What a scan for NaN and Inf found: how many, and the first in row-major order (as an index
// row * cols + col; UINT64_MAX when none). Lives in device memory (`found`, zeroed by the scan).
struct NonfiniteFound {
  unsigned long long count;
  unsigned long long first;
};

// Counts NaN and Inf in src (rows x cols, rows `ld` elements apart) into *found (device memory).
void gpu_count_nonfinite(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, std::int64_t ld,
                         NonfiniteFound* found, cudaStream_t stream);

// Whether `ptr` is memory the GPU `device` reads at that address (device or managed memory, or
// host memory mapped for it); `why` says what it is otherwise. Never throws.
bool gpu_addressable(const void* ptr, int device, const char** why);

}  // namespace tessera::kernels
