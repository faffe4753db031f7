#pragma once
// GPU GEMM kernels behind one dispatcher: C = A * B on device memory, row-major and contiguous
// (A is m x k, B is k x n, C is m x n), asynchronously on a stream. Kernels are chosen by name
// from a registry ("naive", "tiled32", "regtile", "vectorized", "warptile-128x128", "dmma", the
// opt-in tensor-core "tf32"/"bf16" (and "tf32-wgmma"/"bf16-wgmma" in sm_90a builds), the cuBLAS
// calls "cublas", "cublas-tf32", "cublas-bf16", "cublas-bf16-stored", ...; docs/kernels.md); the
// CUDA backend and `tessera bench` list them from here, so a kernel added to the registry shows
// up in both. Knows nothing of MPI, HDF5 or the CLI.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"

struct cublasContext;    // cublasHandle_t is cublasContext*; kept out of this header
struct cublasLtContext;  // cublasLtHandle_t likewise

namespace tessera::kernels {

// How A and B are stored in device memory: in the dtype (every kernel but one), or as BF16 for
// the cuBLAS baseline on BF16-stored data ("cublas-bf16-stored", float32 C). C is always in the
// dtype. A kernel runs only on the storage it was registered for (gpu_can_implement).
enum class InputStorage { dtype, bf16 };

// One GEMM on device memory. Sizes may be 0 (nothing to do, or C = 0 when k == 0).
struct GpuGemm {
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // device, m x k
  const void* b = nullptr;  // device, k x n
  void* c = nullptr;        // device, m x n
  cudaStream_t stream = nullptr;
  // C += A * B instead of C = A * B (SUMMA sums its panels this way). Kernels that cannot add
  // into C themselves (GpuKernel::accumulates) write a scratch C the context keeps, which the
  // dispatcher then adds: one more read and write of C per call.
  bool accumulate = false;
  InputStorage inputs = InputStorage::dtype;
  // Nonzero: the caller promises that B's device memory holds the same values in every call
  // carrying this key (B uploaded once for many tiles of A's rows; a new upload takes a new key,
  // new_operand_key()). A kernel may then keep what it made of B between such calls (f64-ozaki:
  // B's pre-pass and int8 residues). 0: nothing is promised.
  std::uint64_t b_key = 0;
};

// A key no earlier call of this process was given (GpuGemm::b_key).
std::uint64_t new_operand_key();

// Per-device state the kernels share: a cuBLAS handle, created on first use on the current
// device in the default math mode (each cuBLAS call names its compute type: FP32 stays FP32,
// see kernels/cublas_gemm.cu). One context per device and thread; not thread-safe.
class GpuContext {
 public:
  GpuContext() = default;
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cublasContext* cublas();
  // A cuBLASLt handle, created on first use (the calls that pick cuBLASLt's algorithm by timing
  // it: kernels/int8_gemm.hpp).
  cublasLtContext* cublaslt();
  // Device scratch of at least `bytes`, kept until a larger one is asked for. Calls that use it
  // (accumulating GEMMs) must be ordered: one stream per context.
  void* scratch(std::size_t bytes);
  // Device scratch for operands a kernel converts before it multiplies (the wgmma kernels' TF32 /
  // BF16 copies of A and B), kept the same way; separate from scratch(), so that one call may use
  // both. Same ordering rule.
  void* operand_scratch(std::size_t bytes);
  // Whether operand_scratch(bytes) would leave at least 512 MiB of the GPU's memory free (a job's
  // buffers were sized against what was free before any copies: the rounding kernels then run in
  // FP32 instead of failing).
  bool operand_scratch_fits(std::size_t bytes) const;
  // How many times operand_scratch() was called, and its size now: a kernel that left data in it
  // finds it intact while no other call took it and it was not reallocated (grown).
  std::uint64_t operand_scratch_calls() const { return operand_scratch_calls_; }
  std::size_t operand_scratch_capacity() const { return operand_scratch_bytes_; }
  // State a kernel keeps between its calls on this context, by kernel name (f64-ozaki: what it
  // made of a B the caller promised unchanged, GpuGemm::b_key); empty until the kernel sets it.
  std::shared_ptr<void>& kept(const std::string& kernel) { return kept_[kernel]; }
  // What the last call's kernel chose at run time and the error it guarantees (f64-ozaki's moduli,
  // or the DGEMM it ran instead and why), for the report; kernels that choose nothing leave it.
  const std::string& note() const { return note_; }
  void set_note(std::string text) { note_ = std::move(text); }

 private:
  std::string note_;
  cublasContext* cublas_ = nullptr;
  cublasLtContext* cublaslt_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  void* operand_scratch_ = nullptr;
  std::size_t operand_scratch_bytes_ = 0;
  std::uint64_t operand_scratch_calls_ = 0;
  std::map<std::string, std::shared_ptr<void>> kept_;
};

// Registered kernel names, in bench order (the naive baseline first, the cuBLAS calls last).
std::vector<std::string> gpu_kernel_names();

// A one-line description of a kernel ("" for an unknown name).
std::string gpu_kernel_summary(const std::string& kernel);

// What a kernel promises, for choosing it and checking it.
struct GpuKernelTraits {
  std::string summary;
  // Unit roundoff of the inputs as multiplied (2^-11 TF32, 2^-8 BF16); 0 = the dtype's own.
  double input_unit_roundoff = 0;
  bool opt_in = false;                        // chosen only when named: reduced precision (never by `auto`)
  bool vendor = false;                        // a cuBLAS call: what `tessera bench` compares the others with
  bool needs_cublas = false;                  // loads cuBLAS (the vendor calls, and kernels built on it)
  bool accumulates = false;                   // adds into C itself; else GpuGemm::accumulate uses a scratch C
  InputStorage inputs = InputStorage::dtype;  // how it takes A and B (GpuGemm::inputs)
  bool needs_sm90a = false;                   // Hopper's wgmma and TMA: runs on compute capability 9.0 only
};

// Traits of a registered kernel; false (and *out untouched) for an unknown name.
bool gpu_kernel_traits(const std::string& kernel, GpuKernelTraits* out);

// The kernels `--kernel auto` and `tessera tune` choose from: every full-precision kernel (not
// opt-in), tessera's own and cuBLAS, in registry order.
std::vector<std::string> gpu_auto_candidates();

// Componentwise forward-error bound of `kernel` on a length-k product in `dtype`:
// |C - A*B| <= bound * (|A| |B|) elementwise. For full-precision kernels gamma_k(dtype). For
// kernels that round the inputs to a narrower format with unit roundoff u_in first (TF32, BF16):
// each product a*b becomes a(1+d1) * b(1+d2) with |d1|, |d2| <= u_in, an error of at most
// (2 u_in + u_in^2) |a||b|; that product is exact in float32 (11 x 11 and 8 x 8 significant bits
// fit in 24), and the float32 sum of k of them adds gamma_k(f32) (1 + u_in)^2 |a||b|.
double gpu_error_bound(const std::string& kernel, DType dtype, std::int64_t k);

// Whether `kernel` can run a problem of g's type and sizes (the kernel exists, the sizes are
// valid and within its limits; the pointers are not looked at, so this may be asked before
// allocating); when not, `why` (if given) says why in one line. Touches no device.
bool gpu_can_implement(const std::string& kernel, const GpuGemm& g, std::string* why = nullptr);

// Enqueues C = A * B (C += A * B with g.accumulate) on g.stream and returns without waiting. Throws InputError when the
// kernel is unknown or cannot implement the problem (the message says why), DeviceError when
// a CUDA or cuBLAS call fails.
void gpu_gemm(const std::string& kernel, const GpuGemm& g, GpuContext& ctx);

// C = alpha op(A) op(B) + beta C of complex elements (DType c64 or c128) through cuBLAS (GemmEx on
// CUDA_C_32F / CUDA_C_64F, no kernel of tessera's own): A, B and C row-major in GPU memory with
// their own leading dimensions, op 'N', 'T' or 'C' (the conjugate transpose) per operand, alpha
// and beta as {real, imaginary} (beta 0: C not read). Enqueued on `stream`. Throws
// std::length_error for a size or leading dimension of 2^31 or more (cuBLAS takes int).
struct GpuComplexGemm {
  DType dtype = DType::c128;
  char op_a = 'N', op_b = 'N';
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  std::int64_t lda = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0;
  void* c = nullptr;
  std::int64_t ldc = 0;
  double alpha[2] = {1, 0}, beta[2] = {0, 0};
  cudaStream_t stream = nullptr;
};
void gpu_complex_gemm(const GpuComplexGemm& g, GpuContext& ctx);

// What a kernel needs once before its first launch, kept out of any timed region. The cuBLAS
// calls load the library (~0.3 s: kernels/cublas_library.hpp) and create the context's handle;
// tessera's own kernels need nothing. gpu_load_library does the first part only: it touches no
// device and is thread-safe, so a caller may run it beside other work (the backend overlaps it
// with reading the inputs); gpu_prepare does both, on the context's device. Unknown names: nothing.
void gpu_load_library(const std::string& kernel);
void gpu_prepare(const std::string& kernel, GpuContext& ctx);

// The library load of gpu_load_library, then one small GEMM (64 x 64 x 64, zeros) of `kernel` in
// `dtype` on `device`, with a context and stream of its own, waited for. A process's first cuBLAS
// GEMM costs 40-80 ms more than the next ones (its one-time set-up, whatever the shape: measured
// on the H200, 2026-12-01: 8192^3 DGEMM 58-98 ms cold, 17.1 ms after a 64^3 call); run beside the
// reads, this takes that cost off the first timed GEMM. Thread-safe; throws as gpu_gemm does.
void gpu_warm_up(const std::string& kernel, DType dtype, int device);

// out[i] = in[i] rounded to BF16 (to nearest, ties to even), i < count, enqueued on `stream`:
// the rounding pass of "cublas-bf16", and how callers make BF16-stored inputs for
// "cublas-bf16-stored". `out` holds count 2-byte values.
void gpu_round_to_bf16(const float* in, void* out, std::int64_t count, cudaStream_t stream);
// The same to IEEE FP16 (beyond 65504: Inf): how a float32 C stored as float16 leaves the GPU
// (the staged GEMM): every number rounded as the host's conversion rounds it; a NaN stays a NaN
// (the GPU writes its canonical one, the host may keep a payload).
void gpu_round_to_f16(const float* in, void* out, std::int64_t count, cudaStream_t stream);

// C (float32) = A B on A and B stored as 16-bit floats (FP16, or BF16 where `bfloat16`), FP32
// accumulation: what "cublas-f16" / "cublas-bf16" compute after their rounding pass, for
// operands that arrive already so (the staged GEMM uploads half-precision files as stored). The
// caller has made cuBLAS ready (gpu_prepare of "cublas-f16" / "cublas-bf16"); g.dtype float32,
// g.a and g.b point to 2-byte values, C = A B or C += A B (g.accumulate).
void gpu_cublas_half_stored(const GpuGemm& g, bool bfloat16, GpuContext& ctx);

}  // namespace tessera::kernels
