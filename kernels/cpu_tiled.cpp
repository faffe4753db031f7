// cpu-tiled: the GPU lesson's tile algorithm on the CPU. C is computed one TILE x TILE tile at
// a time; for each phase over K the matching TILE x TILE tiles of A and B are visited while
// they sit in L1/L2 (the CPU's "shared memory"), so each loaded value serves TILE products
// instead of one. Inside a tile the i-p-j order streams rows of B and C with unit stride,
// which the compiler vectorises; the naive i-j-p order walks B by columns instead.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu_gemm.hpp"

namespace tessera::kernels {

namespace {
// 64 x 64 doubles = 32 KiB per tile: A, B and C tiles together fit in a typical 256 KiB+ L2.
constexpr std::int64_t kTile = 64;
}  // namespace

template <class T>
void cpu_tiled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  for (std::int64_t i0 = 0; i0 < m; i0 += kTile) {
    const std::int64_t i1 = std::min(i0 + kTile, m);
    for (std::int64_t j0 = 0; j0 < n; j0 += kTile) {
      const std::int64_t j1 = std::min(j0 + kTile, n);
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = j0; j < j1; ++j) c[i * n + j] = 0;
      for (std::int64_t p0 = 0; p0 < k; p0 += kTile) {  // the phases over K
        const std::int64_t p1 = std::min(p0 + kTile, k);
        for (std::int64_t i = i0; i < i1; ++i) {
          T* __restrict c_row = c + i * n;
          for (std::int64_t p = p0; p < p1; ++p) {
            const T a_ip = a[i * k + p];
            const T* __restrict b_row = b + p * n;
            for (std::int64_t j = j0; j < j1; ++j) c_row[j] += a_ip * b_row[j];
          }
        }
      }
    }
  }
}

template void cpu_tiled_gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, const float*, float*);
template void cpu_tiled_gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, const double*, double*);

}  // namespace tessera::kernels
