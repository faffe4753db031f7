// cpu-naive: the reference triple loop, one dot product per element of C (i-j-k order).
// Deliberately untuned: it is the baseline the tiled kernel's speedup is measured against.
#include <cstdint>

#include "kernels/cpu_gemm.hpp"

namespace tessera::kernels {

template <class T>
void cpu_naive_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = sum;
    }
  }
}

template void cpu_naive_gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, const float*, float*);
template void cpu_naive_gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, const double*, double*);

}  // namespace tessera::kernels
