#pragma once
// cuBLAS, loaded when a kernel first needs it rather than when tessera starts. Loading cuBLAS and
// cuBLASLt (hundreds of MB, with static initialisers) costs every process about 0.3 s on the dev
// machine, also `tessera --version` and every run whose kernels are tessera's own; so tessera
// does not link them and opens them with dlopen here on first use. Only the types come from
// <cublas_v2.h>.
#include <cublasLt.h>
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

// cuBLASLt's matmul, for the calls that choose among its algorithms (kernels/int8_gemm.hpp):
// cublasGemmEx takes the heuristic's first choice, which for some shapes runs at half the rate of
// its second. Loaded with cuBLAS's major version, on first use, the same way.
struct CublasLtApi {
  cublasStatus_t (*create)(cublasLtHandle_t*);
  cublasStatus_t (*destroy)(cublasLtHandle_t);
  cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t);
  cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*, size_t);
  cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t, int64_t);
  cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t*);
  cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void*, size_t);
  cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                              cublasLtMatmulHeuristicResult_t*, int*);
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                           const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
};

// The cuBLASLt entry points, loaded on the first call (thread-safe); throws DeviceError as
// cublas_api() does.
const CublasLtApi& cublaslt_api();

// Whether cuBLAS is loaded in this process (for tests of the lazy loading).
bool cublas_loaded();

}  // namespace tessera::kernels
