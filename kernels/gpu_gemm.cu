// The GPU kernel registry and dispatcher: finds a kernel by name, checks the problem once for
// every kernel (sizes, pointers, the kernel's own limits, like CUTLASS's can_implement() before
// run()), handles the empty cases, and runs it. Also the shared per-device GpuContext.
#include <cublas_v2.h>

#include "kernels/cublas_library.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_gemm.hpp"
#include "kernels/gpu_kernel.hpp"

namespace tessera::kernels {

std::uint64_t new_operand_key() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

// ---- GpuContext --------------------------------------------------------------------------------

GpuContext::~GpuContext() {
  if (scratch_) (void)cudaFree(scratch_);
  if (operand_scratch_) (void)cudaFree(operand_scratch_);
  if (cublas_) (void)cublas_api().destroy(cublas_);  // a handle exists only once cuBLAS is loaded
  if (cublaslt_) (void)cublaslt_api().destroy(cublaslt_);
}

namespace {

// Device memory of at least `bytes` in *buffer (size *have), reallocated when it is too small.
void grow_scratch(void*& buffer, std::size_t& have, std::size_t bytes, const char* what) {
  if (bytes <= have) return;
  if (buffer) CUDA_CHECK(cudaFree(buffer));  // waits for the work that used it
  buffer = nullptr;
  have = 0;
  const cudaError_t err = cudaMalloc(&buffer, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    buffer = nullptr;
    throw DeviceError("out of GPU memory allocating " + std::to_string(bytes >> 20) + " MiB of " + what +
                      "; use more ranks");
  }
  if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__);
  have = bytes;
}

}  // namespace

void* GpuContext::scratch(std::size_t bytes) {
  grow_scratch(scratch_, scratch_bytes_, bytes, "scratch (a C to add from, or partial C's)");
  return scratch_;
}

bool GpuContext::operand_scratch_fits(std::size_t bytes) const {
  if (bytes <= operand_scratch_bytes_) return true;
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  constexpr std::size_t kHeadroom = std::size_t{512} << 20;   // cuBLAS's workspace and the like
  return bytes + kHeadroom <= free + operand_scratch_bytes_;  // (the smaller copy is freed first)
}

void* GpuContext::operand_scratch(std::size_t bytes) {
  ++operand_scratch_calls_;
  grow_scratch(operand_scratch_, operand_scratch_bytes_, bytes, "converted operands (TF32/BF16 copies of A and B)");
  return operand_scratch_;
}

// CUBLAS_DEFAULT_MATH, as cublasCreate leaves it: every call in kernels/cublas_gemm.cu names its
// compute type, which alone decides whether inputs are rounded (TF32, BF16) or not (FP32, FP64).
// Pedantic math cost DGEMM about a quarter of its speed on the H200 and SGEMM nothing.
cublasContext* GpuContext::cublas() {
  if (!cublas_) {
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublas_api().create(&handle));
    cublas_ = handle;
  }
  return cublas_;
}

cublasLtContext* GpuContext::cublaslt() {
  if (!cublaslt_) {
    cublasLtHandle_t handle = nullptr;
    CUBLAS_CHECK(cublaslt_api().create(&handle));
    cublaslt_ = handle;
  }
  return cublaslt_;
}

// ---- registry ----------------------------------------------------------------------------------

namespace {

// Every GPU kernel, in bench order: the naive baseline first, the vendor baseline last. One
// entry per technique file (see kernels/gpu_kernel.hpp); each contributes its variants.
const std::vector<GpuKernel>& registry() {
  static const std::vector<GpuKernel> all = [] {
    std::vector<GpuKernel> kernels;
    for (auto technique : {
             naive_kernels, tiled_kernels, regtile_kernels, vectorized_kernels, warptile_kernels,
             warptile_staged_kernels, tensorcore_kernels, dmma_kernels, wgmma_kernels, ozaki_kernels,
             cublas_kernels,  // keep last: the baselines the others are compared with
         }) {
      for (GpuKernel& kernel : technique()) kernels.push_back(std::move(kernel));
    }
    return kernels;
  }();
  return all;
}

const GpuKernel* find_kernel(const std::string& name) {
  for (const GpuKernel& kernel : registry())
    if (kernel.name == name) return &kernel;
  return nullptr;
}

std::string known_kernels() {
  std::string list;
  for (const GpuKernel& kernel : registry()) list += (list.empty() ? "" : ", ") + kernel.name;
  return list;
}

// c[i] += t[i] for i < count (grid-stride).
template <class T>
__global__ void add_into(std::int64_t count, const T* __restrict__ t, T* __restrict__ c) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    c[i] += t[i];
}

template <class T>
void launch_add_into(std::int64_t count, const void* t, void* c, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(ceil_div(count, kThreads), 65535));
  add_into<T><<<blocks, kThreads, 0, stream>>>(count, static_cast<const T*>(t), static_cast<T*>(c));
  CUDA_CHECK_LAUNCH();
}

bool fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

#ifndef TESSERA_HAVE_SM90A
// This build has no sm_90a code (kernels/wgmma.cu is built only for it): no wgmma kernels.
std::vector<GpuKernel> wgmma_kernels() { return {}; }
#endif

bool f32_only(const GpuGemm& g, std::string* why) {
  if (g.dtype == DType::f32) return true;
  return fail(why,
              "tensor-core kernels take float32 data only (they round it to TF32 or BF16); "
              "use a full-precision kernel for float64");
}

void allow_dynamic_smem(const void* kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

int multiprocessors() {
  int device = 0, count = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

std::int64_t resident_blocks(const void* kernel, int threads, std::size_t smem_bytes) {
  // Asked once per device, kernel, launch shape and thread (contexts are per thread; no lock).
  struct Known {
    int device;
    const void* kernel;
    int threads;
    std::size_t smem_bytes;
    std::int64_t blocks;
  };
  thread_local std::vector<Known> known;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  for (const Known& k : known)
    if (k.device == device && k.kernel == kernel && k.threads == threads && k.smem_bytes == smem_bytes) return k.blocks;
  allow_dynamic_smem(kernel, smem_bytes);  // before asking: the answer depends on the limit
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes));
  const std::int64_t blocks = std::max<std::int64_t>(std::int64_t{multiprocessors()} * per_sm, 1);
  known.push_back({device, kernel, threads, smem_bytes, blocks});
  return blocks;
}

bool gpu_kernel_traits(const std::string& kernel, GpuKernelTraits* out) {
  const GpuKernel* found = find_kernel(kernel);
  if (!found) return false;
  if (out) {
    out->summary = found->summary;
    out->input_unit_roundoff = found->input_unit_roundoff;
    out->opt_in = found->opt_in;
    out->vendor = found->vendor;
    out->needs_cublas = found->vendor || found->uses_cublas;
    out->accumulates = found->accumulates;
    out->inputs = found->inputs;
    out->needs_sm90a = found->needs_sm90a;
  }
  return true;
}

std::vector<std::string> gpu_auto_candidates() {
  std::vector<std::string> names;
  for (const GpuKernel& kernel : registry())
    if (!kernel.opt_in) names.push_back(kernel.name);
  return names;
}

double gpu_error_bound(const std::string& kernel, DType dtype, std::int64_t k) {
  const GpuKernel* found = find_kernel(kernel);
  const double u_in = found ? found->input_unit_roundoff : 0.0;
  if (u_in == 0.0) return gamma_bound(dtype, k);
  // Inputs rounded to u_in, exact products, a float32 sum (see gpu_gemm.hpp).
  return 2 * u_in + u_in * u_in + gamma_bound(DType::f32, k) * (1 + u_in) * (1 + u_in);
}

std::vector<std::string> gpu_kernel_names() {
  std::vector<std::string> names;
  for (const GpuKernel& kernel : registry()) names.push_back(kernel.name);
  return names;
}

std::string gpu_kernel_summary(const std::string& kernel) {
  const GpuKernel* found = find_kernel(kernel);
  return found ? found->summary : std::string();
}

bool gpu_can_implement(const std::string& kernel, const GpuGemm& g, std::string* why) {
  const GpuKernel* found = find_kernel(kernel);
  if (!found) {
    return fail(why, "unknown GPU kernel '" + kernel + "' (known: " + known_kernels() + ")");
  }
  if (g.dtype != DType::f32 && g.dtype != DType::f64) return fail(why, "GPU kernels take float32 or float64");
  if (g.m < 0 || g.n < 0 || g.k < 0) {
    return fail(why,
                "negative GEMM size " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k));
  }
  if (g.m == 0 || g.n == 0 || g.k == 0) return true;  // nothing is read: C = 0, or left alone
  if (g.inputs != found->inputs) {
    return fail(why, found->inputs == InputStorage::bf16
                         ? kernel + " takes A and B stored as BF16; these are " + dtype_name(g.dtype) +
                               " (cublas-bf16 rounds float32 inputs itself)"
                         : kernel + " takes A and B in the dtype, not stored as BF16");
  }
  return !found->can_implement || found->can_implement(g, why);
}

void gpu_load_library(const std::string& kernel) {
  const GpuKernel* found = find_kernel(kernel);
  if (found && (found->vendor || found->uses_cublas)) (void)cublas_api();
}

void gpu_prepare(const std::string& kernel, GpuContext& ctx) {
  const GpuKernel* found = find_kernel(kernel);
  if (found && (found->vendor || found->uses_cublas)) (void)ctx.cublas();
}

namespace {

// Device buffers and a stream for gpu_warm_up, freed on every path.
struct WarmUpResources {
  void* buffers[3] = {nullptr, nullptr, nullptr};
  cudaStream_t stream = nullptr;
  ~WarmUpResources() {
    if (stream) (void)cudaStreamSynchronize(stream), (void)cudaStreamDestroy(stream);
    for (void* b : buffers)
      if (b) (void)cudaFree(b);
  }
};

}  // namespace

void gpu_warm_up(const std::string& kernel, DType dtype, int device) {
  gpu_load_library(kernel);
  constexpr std::int64_t kSide = 64;
  if (is_complex(dtype)) {  // cuBLAS's complex GEMM (the only one): one small product of that dtype
    const GpuKernel* found = find_kernel(kernel);
    if (!found || !found->vendor) return;
    CUDA_CHECK(cudaSetDevice(device));
    WarmUpResources r;
    const std::size_t bytes = static_cast<std::size_t>(kSide * kSide) * dtype_size(dtype);
    for (void*& b : r.buffers) {
      CUDA_CHECK(cudaMalloc(&b, bytes));
      CUDA_CHECK(cudaMemset(b, 0, bytes));
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    GpuComplexGemm g;
    g.dtype = dtype, g.m = g.n = g.k = kSide;
    g.a = r.buffers[0], g.b = r.buffers[1], g.c = r.buffers[2];
    g.lda = g.ldb = g.ldc = kSide;
    g.stream = r.stream;
    GpuContext ctx;
    gpu_complex_gemm(g, ctx);
    CUDA_CHECK(cudaStreamSynchronize(r.stream));
    return;
  }
  GpuGemm g{dtype, kSide, kSide, kSide};
  const GpuKernel* found = find_kernel(kernel);
  if (!found) return;
  g.inputs = found->inputs;
  if (!gpu_can_implement(kernel, g, nullptr)) return;  // not this dtype or shape: nothing to warm
  CUDA_CHECK(cudaSetDevice(device));
  WarmUpResources r;
  const std::size_t bytes = static_cast<std::size_t>(kSide * kSide) * sizeof(double);  // the widest element
  for (void*& b : r.buffers) {
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMemset(b, 0, bytes));
  }
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  g.a = r.buffers[0], g.b = r.buffers[1], g.c = r.buffers[2], g.stream = r.stream;
  GpuContext ctx;
  gpu_gemm(kernel, g, ctx);
  CUDA_CHECK(cudaStreamSynchronize(r.stream));
}

void gpu_gemm(const std::string& kernel, const GpuGemm& g, GpuContext& ctx) {
  std::string why;
  if (!gpu_can_implement(kernel, g, &why)) throw InputError(why);
  ctx.set_note({});                  // a kernel that chooses at run time says what it chose
  if (g.m == 0 || g.n == 0) return;  // C is empty
  if (!g.c || (g.k > 0 && (!g.a || !g.b))) throw InputError("GPU GEMM without a device buffer for A, B or C");
  const std::size_t c_bytes = static_cast<std::size_t>(g.m * g.n) * dtype_size(g.dtype);
  if (g.k == 0) {  // an empty sum: C = 0 (all-zero bits are 0.0), or C unchanged
    if (!g.accumulate) CUDA_CHECK(cudaMemsetAsync(g.c, 0, c_bytes, g.stream));
    return;
  }
  const GpuKernel* found = find_kernel(kernel);
  if (!g.accumulate || found->accumulates) return found->run(g, ctx);
  // C += A * B for a kernel that only writes C: into scratch, then added.
  GpuGemm into_scratch = g;
  into_scratch.c = ctx.scratch(c_bytes);
  into_scratch.accumulate = false;
  found->run(into_scratch, ctx);
  if (g.dtype == DType::f32)
    launch_add_into<float>(g.m * g.n, into_scratch.c, g.c, g.stream);
  else
    launch_add_into<double>(g.m * g.n, into_scratch.c, g.c, g.stream);
}

}  // namespace tessera::kernels
