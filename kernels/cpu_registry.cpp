// The CPU kernel registry: each CPU kernel once, by name, with its float32 and float64 entry points
// (as kernels/gpu_gemm.cu registers the GPU ones). The CPU backend and `tessera bench` run a kernel
// through it, `tessera info` and the option table (src/job/run_options.cpp) list it.
#include <string>
#include <vector>

#include "kernels/cpu_gemm.hpp"

namespace tessera::kernels {

namespace {

template <template <class> class Fn>
CpuKernel entry(const char* name, const char* summary, bool vendor = false) {
  return {name, summary, vendor,
          [](std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c) {
            Fn<float>::run(m, n, k, a, b, c);
          },
          [](std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b, double* c) {
            Fn<double>::run(m, n, k, a, b, c);
          }};
}

template <class T>
struct Blas {
  static void run(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
    openblas_gemm<T>(m, n, k, a, b, c);
  }
};
template <class T>
struct Tiled {
  static void run(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
    cpu_tiled_gemm<T>(m, n, k, a, b, c);
  }
};
template <class T>
struct Naive {
  static void run(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
    cpu_naive_gemm<T>(m, n, k, a, b, c);
  }
};

}  // namespace

const std::vector<CpuKernel>& cpu_kernels() {
  static const std::vector<CpuKernel> all = {
      entry<Blas>("openblas", "sgemm / dgemm of the BLAS the build found (CBLAS, row-major)", true),
      entry<Tiled>("cpu-tiled", "cache blocking: tiles of A and B, each C tile summed while they are hot"),
      entry<Naive>("cpu-naive", "the reference: one dot product per element of C, i-j-k order"),
  };
  return all;
}

const CpuKernel* find_cpu_kernel(const std::string& name) {
  for (const CpuKernel& kernel : cpu_kernels())
    if (name == kernel.name) return &kernel;
  return nullptr;
}

std::vector<std::string> cpu_kernel_names() {
  std::vector<std::string> names;
  for (const CpuKernel& kernel : cpu_kernels()) names.emplace_back(kernel.name);
  return names;
}

}  // namespace tessera::kernels
