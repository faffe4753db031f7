#pragma once
// cuBLAS, loaded when a kernel first needs it rather than when tessera starts. Loading cuBLAS and
// cuBLASLt (hundreds of MB, with static initialisers) costs every process about 0.3 s on the dev
// machine, also `tessera --version` and every run whose kernels are tessera's own; so tessera
// does not link them and opens them with dlopen here on first use. Only the types come from
// <cublas_v2.h>.
#include <cublas_v2.h>

namespace tessera::kernels {

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  const char* (*status_name)(cublasStatus_t);
  const char* (*status_string)(cublasStatus_t);
};

// The cuBLAS entry points, loaded on the first call (thread-safe). Throws DeviceError naming the
// library and dlerror() when it cannot be loaded.
const CublasApi& cublas_api();

// Whether cuBLAS is loaded in this process (for tests of the lazy loading).
bool cublas_loaded();

}  // namespace tessera::kernels
