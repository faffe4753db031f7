// Layout steps around an in-place GEMM (gpu_layout.hpp): a tiled transpose through shared memory
// (reads and writes both coalesced; the tile padded by one column so that a column of it spans
// every bank), an elementwise alpha/beta update, and a NaN/Inf count. All grid-stride or tiled
// over 64-bit sizes.
#include "kernels/gpu_layout.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::kernels {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // a 32 x 8 block moves a 32 x 32 tile in 4 passes

// Tiles of columns along x, tiles of rows along y in steps of gridDim.y (so any number of rows).
template <class T>
__global__ void transpose_tiles(std::int64_t rows, std::int64_t cols, const T* __restrict__ src, std::int64_t ld,
                                T* __restrict__ dst) {
  __shared__ T tile[kTile][kTile + 1];
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kTile; r0 < rows;
       r0 += static_cast<std::int64_t>(gridDim.y) * kTile) {
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const std::int64_t r = r0 + i, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * ld + c];
    }
    __syncthreads();
    // dst row = a column of src, dst col = a row of src.
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const std::int64_t c = c0 + i, r = r0 + threadIdx.x;
      if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
    }
    __syncthreads();  // the tile is refilled next
  }
}

template <class T>
__global__ void scale_add(std::int64_t rows, std::int64_t cols, T alpha, const T* t, T beta, bool read_c, T* c,
                          std::int64_t ldc) {  // t may be c (ldc == cols)
  const std::int64_t count = rows * cols;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / cols, col = i - r * cols;
    T& out = c[r * ldc + col];
    out = read_c ? alpha * t[i] + beta * out : alpha * t[i];
  }
}

// NaN and Inf counted into *found, with the first one's index (row * cols + col) by atomicMin. A
// packed matrix 16-byte aligned: a flat pass with 16-byte loads (the scan of a GPU tensor before
// its product, at the memory's rate: the element-wise pass below, a 64-bit division per element,
// ran at about a third of it). Else rows along y, columns along x: no division.
template <class T, class V>
__global__ void count_nonfinite_packed(std::int64_t count, const T* __restrict__ src, NonfiniteFound* found) {
  constexpr int kPer = sizeof(V) / sizeof(T);
  const std::int64_t vectors = count / kPer;
  const V* __restrict__ v = reinterpret_cast<const V*>(src);
  unsigned long long mine = 0, first = ~0ull;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < vectors; i += step) {
    const V x = v[i];
    const T* e = reinterpret_cast<const T*>(&x);
#pragma unroll
    for (int q = 0; q < kPer; ++q)
      if (!isfinite(e[q])) {
        ++mine;
        first = min(first, static_cast<unsigned long long>(i * kPer + q));
      }
  }
  for (std::int64_t i = vectors * kPer + blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += step)
    if (!isfinite(src[i])) {
      ++mine;
      first = min(first, static_cast<unsigned long long>(i));
    }
  if (mine) {
    atomicAdd(&found->count, mine);
    atomicMin(&found->first, first);
  }
}

// Blocks of 32 columns x 8 rows (a strided view of few columns still keeps 8 rows a block busy).
template <class T>
__global__ void count_nonfinite(std::int64_t rows, std::int64_t cols, const T* __restrict__ src, std::int64_t ld,
                                NonfiniteFound* found) {
  unsigned long long mine = 0, first = ~0ull;
  for (std::int64_t r = blockIdx.y * static_cast<std::int64_t>(blockDim.y) + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y)
    for (std::int64_t col = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; col < cols;
         col += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
      if (!isfinite(src[r * ld + col])) {
        ++mine;
        first = min(first, static_cast<unsigned long long>(r * cols + col));
      }
  if (mine) {
    atomicAdd(&found->count, mine);
    atomicMin(&found->first, first);
  }
}

unsigned grid_for(std::int64_t count, int threads) {
  return static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>((count + threads - 1) / threads, 65535)));
}

}  // namespace

void gpu_transpose(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, std::int64_t ld, void* dst,
                   cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const std::int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  if (col_tiles > INT_MAX)
    throw InputError("transpose of a " + std::to_string(rows) + "x" + std::to_string(cols) +
                     " matrix: too many columns for one launch");
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(std::min<std::int64_t>(row_tiles, 65535))),
      block(kTile, kRowsPerPass);
  if (dtype == DType::f32)
    transpose_tiles<float>
        <<<grid, block, 0, stream>>>(rows, cols, static_cast<const float*>(src), ld, static_cast<float*>(dst));
  else
    transpose_tiles<double>
        <<<grid, block, 0, stream>>>(rows, cols, static_cast<const double*>(src), ld, static_cast<double*>(dst));
  CUDA_CHECK_LAUNCH();
}

void gpu_scale_add(DType dtype, std::int64_t rows, std::int64_t cols, double alpha, const void* t, double beta, void* c,
                   std::int64_t ldc, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  constexpr int kThreads = 256;
  const unsigned blocks = grid_for(rows * cols, kThreads);
  if (dtype == DType::f32)
    scale_add<float><<<blocks, kThreads, 0, stream>>>(rows, cols, static_cast<float>(alpha),
                                                      static_cast<const float*>(t), static_cast<float>(beta), beta != 0,
                                                      static_cast<float*>(c), ldc);
  else
    scale_add<double><<<blocks, kThreads, 0, stream>>>(rows, cols, alpha, static_cast<const double*>(t), beta,
                                                       beta != 0, static_cast<double*>(c), ldc);
  CUDA_CHECK_LAUNCH();
}

void gpu_count_nonfinite(DType dtype, std::int64_t rows, std::int64_t cols, const void* src, std::int64_t ld,
                         NonfiniteFound* found, cudaStream_t stream) {
  // count = 0, first = all ones (UINT64_MAX): set on the device, no host memory in the stream's way.
  CUDA_CHECK(cudaMemsetAsync(&found->count, 0, sizeof found->count, stream));
  CUDA_CHECK(cudaMemsetAsync(&found->first, 0xFF, sizeof found->first, stream));
  if (rows == 0 || cols == 0) return;
  constexpr int kThreads = 256;
  const bool packed = (ld == cols || rows == 1) && reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
  if (packed) {
    const std::int64_t count = rows * cols;
    const unsigned blocks = std::min(grid_for(count / (dtype == DType::f32 ? 4 : 2) + 1, kThreads), 4096u);
    if (dtype == DType::f32)
      count_nonfinite_packed<float, float4>
          <<<blocks, kThreads, 0, stream>>>(count, static_cast<const float*>(src), found);
    else
      count_nonfinite_packed<double, double2>
          <<<blocks, kThreads, 0, stream>>>(count, static_cast<const double*>(src), found);
  } else {
    const dim3 block(32, 8);
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((cols + 31) / 32, 64)),
                    static_cast<unsigned>(std::min<std::int64_t>((rows + 7) / 8, 65535)));
    if (dtype == DType::f32)
      count_nonfinite<float><<<grid, block, 0, stream>>>(rows, cols, static_cast<const float*>(src), ld, found);
    else
      count_nonfinite<double><<<grid, block, 0, stream>>>(rows, cols, static_cast<const double*>(src), ld, found);
  }
  CUDA_CHECK_LAUNCH();
}

bool gpu_addressable(const void* ptr, int device, const char** why) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = "not memory CUDA knows";
    return false;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      if (attributes.device == device) return true;
      if (why) *why = "memory of another GPU";
      return false;
    case cudaMemoryTypeManaged:
      return true;
    case cudaMemoryTypeHost:
      if (attributes.devicePointer == ptr) return true;
      if (why) *why = "page-locked host memory not mapped at that address on the GPU";
      return false;
    default:
      if (why) *why = "host memory";
      return false;
  }
}

}  // namespace tessera::kernels
