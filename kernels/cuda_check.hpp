#pragma once
// CUDA_CHECK / CUBLAS_CHECK: every CUDA runtime and cuBLAS call goes through one of these, so a
// failure becomes a tessera::DeviceError naming the call, where it was made and what went
// wrong, instead of an error code nobody reads. CUDA_CHECK_LAUNCH() after every kernel launch
// turns a bad launch configuration into the same kind of error at the line that caused it.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"
#include "kernels/cublas_library.hpp"

namespace tessera::kernels {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw DeviceError(std::string("CUDA call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string("cuBLAS call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cublas_api().status_name(status) + " (" + cublas_api().status_string(status) + ")");
}

// What the macros below expand to: the status of `call` checked once it has returned.
inline void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace tessera::kernels

#define CUDA_CHECK(call) ::tessera::kernels::check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::tessera::kernels::check_cublas((call), #call, __FILE__, __LINE__)

// After a <<<...>>> launch: launch errors (bad configuration, no kernel image for this GPU)
// are reported by cudaGetLastError, not by the launch itself.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
