#pragma once
// What a GPU kernel file provides to the registry (kernels/gpu_gemm.cu), and the helpers those
// files share. Internal to kernels/: callers use kernels/gpu_gemm.hpp.
//
// Adding a kernel: write kernels/<technique>.cu with a function `std::vector<GpuKernel>
// <technique>_kernels()` returning its variants, declare it below, and add it to the list in
// gpu_gemm.cu. The backend, the bench and the GPU tests pick it up from the registry.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gpu_gemm.hpp"

namespace tessera::kernels {

struct GpuKernel {
  GpuKernel(std::string name_, std::string summary_, bool (*can_implement_)(const GpuGemm&, std::string*),
            void (*run_)(const GpuGemm&, GpuContext&), double input_unit_roundoff_ = 0, bool opt_in_ = false)
      : name(std::move(name_)),
        summary(std::move(summary_)),
        can_implement(can_implement_),
        run(run_),
        input_unit_roundoff(input_unit_roundoff_),
        opt_in(opt_in_) {}

  std::string name;
  std::string summary;
  // Limits of this kernel beyond the dispatcher's own checks (sizes >= 0, non-null pointers);
  // nullptr when it has none. On false, sets *why.
  bool (*can_implement)(const GpuGemm& g, std::string* why) = nullptr;
  // Enqueue on g.stream; called only with m, n, k >= 1. Throws DeviceError on failure.
  void (*run)(const GpuGemm& g, GpuContext& ctx) = nullptr;
  // Unit roundoff of the format A and B are rounded to before they are multiplied: 2^-11 for
  // TF32 (10 explicit mantissa bits), 2^-8 for BF16 (7); 0 means the dtype's own (exact inputs).
  double input_unit_roundoff = 0;
  // Chosen only when named: reduced precision (tensor cores, cuBLAS in TF32 or BF16). `auto` and
  // `tessera tune` consider only the kernels that are not opt-in, cuBLAS's full-precision call
  // among them.
  bool opt_in = false;
  // A cuBLAS call (kernels/cublas_gemm.cu): a baseline `tessera bench` compares the others with,
  // which needs the library loaded and a handle before its first launch (gpu_prepare).
  bool vendor = false;
  // Calls cuBLAS itself without being a baseline (f64-ozaki's INT8 GEMMs): the library is loaded
  // and a handle made before its first launch, as for a vendor kernel.
  bool uses_cublas = false;
  // Honours GpuGemm::accumulate itself (C += A * B); otherwise the dispatcher emulates it.
  bool accumulates = false;
  // How it takes A and B: in the dtype, or stored as BF16 (GpuGemm::inputs).
  InputStorage inputs = InputStorage::dtype;
  // Built and run only for sm_90a (Hopper's wgmma and TMA: kernels/wgmma.cu).
  bool needs_sm90a = false;
};

// The technique files.
std::vector<GpuKernel> naive_kernels();            // kernels/naive.cu
std::vector<GpuKernel> tiled_kernels();            // kernels/tiled.cu
std::vector<GpuKernel> regtile_kernels();          // kernels/regtile.cu
std::vector<GpuKernel> vectorized_kernels();       // kernels/vectorized.cu
std::vector<GpuKernel> warptile_kernels();         // kernels/warptile.cu
std::vector<GpuKernel> warptile_staged_kernels();  // kernels/warptile_staged.cu (float32)
std::vector<GpuKernel> tensorcore_kernels();       // kernels/tensorcore.cu
std::vector<GpuKernel> dmma_kernels();             // kernels/dmma.cu (float64)
// kernels/wgmma.cu: Hopper's wgmma + TMA, built only for sm_90a (TESSERA_HAVE_SM90A); an empty
// list in other builds (kernels/gpu_gemm.cu).
std::vector<GpuKernel> wgmma_kernels();
std::vector<GpuKernel> ozaki_kernels();   // kernels/ozaki_gpu.cu (float64 on int8 tensor cores)
std::vector<GpuKernel> cublas_kernels();  // kernels/cublas_gemm.cu

// cuBLAS's full-precision GEMM ("cublas") on g: what kernels fall back to (kernels/cublas_gemm.cu).
void gpu_cublas_gemm(const GpuGemm& g, GpuContext& ctx);

// ---- helpers for launchers -------------------------------------------------------------------

// The one dispatch helper for run-time flags that kernels take as template arguments (like
// flash-attention's static_switch.h): static_switch(f, b1, b2, ...) calls
// f(std::bool_constant<b1>{}, std::bool_constant<b2>{}, ...), so a launcher reads
//   static_switch([&](auto vec_a, auto acc) { launch<Cfg, vec_a(), acc()>(g); }, vec_a, g.accumulate);
// instead of an if/else per combination.
template <class F>
void static_switch(F&& f) {
  f();
}
template <class F, class... Flags>
void static_switch(F&& f, bool first, Flags... rest) {
  static_switch(
      [&](auto... tail) {
        if (first)
          f(std::true_type{}, tail...);
        else
          f(std::false_type{}, tail...);
      },
      rest...);
}

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Hardware limits of a grid (all GPUs since compute capability 3.0).
inline constexpr std::int64_t kMaxGridX = 2147483647;  // 2^31 - 1
inline constexpr std::int64_t kMaxGridY = 65535;

// Grid for kernels where block (x, y) computes the tile_n x tile_m tile of C at tile column x,
// row y: one block per tile where the limits allow, fewer otherwise, and then the kernel
// strides over the remaining tiles (blockIdx + gridDim). So M and N may exceed 65535 * tile.
inline dim3 tile_grid(std::int64_t m, std::int64_t n, int tile_m, int tile_n) {
  const std::int64_t tiles_m = ceil_div(m, tile_m);
  const std::int64_t tiles_n = ceil_div(n, tile_n);
  return dim3(static_cast<unsigned>(std::min(tiles_n, kMaxGridX)), static_cast<unsigned>(std::min(tiles_m, kMaxGridY)),
              1);
}

// Grid-stride loop over the tiles of C owned by this block (see tile_grid): calls
// body(tile_m, tile_n) with the tile's row and column index. Depends only on the block, so every
// thread of a block makes the same calls (each body may hold __syncthreads()).
template <class Body>
__device__ __forceinline__ void for_each_tile(std::int64_t m, std::int64_t n, int tile_m_size, int tile_n_size,
                                              Body&& body) {
  const std::int64_t tiles_m = ceil_div(m, tile_m_size);
  const std::int64_t tiles_n = ceil_div(n, tile_n_size);
  for (std::int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y)
    for (std::int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) body(tm, tn);
}

// A kernel of the plain signature (m, n, k, A, B, C), as the simplest kernels take their operands.
template <class T>
using PlainGemmKernel = void (*)(std::int64_t, std::int64_t, std::int64_t, const T*, const T*, T*);

// Launches the float32 or the float64 instance of a plain kernel, by g.dtype, on g's operands and
// stream (no dynamic shared memory), and checks the launch.
inline void launch_plain(const GpuGemm& g, dim3 grid, dim3 block, PlainGemmKernel<float> f32,
                         PlainGemmKernel<double> f64) {
  if (g.dtype == DType::f32) {
    f32<<<grid, block, 0, g.stream>>>(g.m, g.n, g.k, static_cast<const float*>(g.a), static_cast<const float*>(g.b),
                                      static_cast<float*>(g.c));
  } else {
    f64<<<grid, block, 0, g.stream>>>(g.m, g.n, g.k, static_cast<const double*>(g.a), static_cast<const double*>(g.b),
                                      static_cast<double*>(g.c));
  }
  CUDA_CHECK_LAUNCH();
}

// Whether p is aligned to `bytes` (16-byte vector loads and cp.async need it).
inline bool is_aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

// Refuses anything but float32: the tensor-core kernels convert float32 inputs.
bool f32_only(const GpuGemm& g, std::string* why);

// Raises a kernel's dynamic shared-memory limit when it needs more than the default 48 KiB.
void allow_dynamic_smem(const void* kernel, std::size_t bytes);

// The current device's multiprocessor count (persistent grids, wave counts).
int multiprocessors();

// Blocks of `kernel` (with `threads` threads and smem_bytes of dynamic shared memory) resident at
// once on the current device: SMs x blocks per SM (tail splitting, stream-K). Cached per device,
// kernel and launch shape.
std::int64_t resident_blocks(const void* kernel, int threads, std::size_t smem_bytes);

}  // namespace tessera::kernels
