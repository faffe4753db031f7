#pragma once
// Exact integer products on the INT8 tensor cores for f64-ozaki (kernels/ozaki_gpu.cu): one shape,
// called once per modulus, C (m x n, int32, column-major, ldc m) = A^T B with A (k x m) and B
// (k x n) int8, K-contiguous (lda = ldb = k).
//
// Why not cublasGemmEx: it runs cuBLASLt's heuristic's first algorithm, and on the H100 that one
// runs m = n = k = 16384 at 823 TOPS where the heuristic's second runs it at 1452 (24576^3: 733
// against 1390); at m = 32768 the first is the fast one. So the algorithm is chosen by timing, at
// no cost of its own: the first calls each run the next of the heuristic's first kCandidates
// algorithms (integer products are exact whatever the algorithm, so each call's C is a result the
// caller keeps), timed with events; after the last candidate the fastest is taken for the rest,
// and remembered for the process (per device, shape and alignment), so later products of that
// shape search nothing. Where cuBLASLt offers nothing or fails, cublasGemmEx runs.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gpu_gemm.hpp"

namespace tessera::kernels {

class Int8Gemm {
 public:
  // How many of cuBLASLt's heuristic results are timed (the fast one was among the first three at
  // every shape measured).
  static constexpr int kCandidates = 4;
  // The largest cuBLASLt workspace any candidate may ask (the caller's `workspace` holds this).
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  // `align_a/b/c`: the largest power of two (<= 256) dividing every A, B, C address the calls
  // will pass, in bytes (cuBLASLt's algorithms differ in what they need); `workspace`: device
  // memory of kWorkspaceBytes, used by the calls in stream order.
  Int8Gemm(GpuContext& ctx, cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k, int align_a,
           int align_b, int align_c, void* workspace);
  ~Int8Gemm();
  Int8Gemm(const Int8Gemm&) = delete;
  Int8Gemm& operator=(const Int8Gemm&) = delete;

  // Enqueues C = A^T B on the stream.
  void run(const signed char* a, const signed char* b, int* c);
  // What ran: the algorithm search's times, or the algorithm remembered, or cublasGemmEx and why
  // (for TESSERA_OZAKI_PROFILE). Waits for the timed calls if the search has not ended.
  std::string summary();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The largest power of two, at most 256, dividing `bytes` (0 -> 256).
int pow2_alignment(std::uint64_t bytes);

}  // namespace tessera::kernels
