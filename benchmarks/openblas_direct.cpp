// A direct OpenBLAS call, timed the way tessera times its compute phase: the baseline for
// "tessera's openblas backend is within 5% of calling OpenBLAS yourself" (docs/performance.md).
//   openblas_direct N [repeats] [f32|f64]  -> prints the median seconds of cblas_?gemm
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

template <class T>
double time_gemm(int n, int repeats) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<T> a(count), b(count), c(count);
  for (auto& x : a) x = static_cast<T>(u(rng));
  for (auto& x : b) x = static_cast<T>(u(rng));
  std::vector<double> times;
  for (int r = 0; r <= repeats; ++r) {  // the first run is a warm-up
    const auto t0 = std::chrono::steady_clock::now();
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (r > 0) times.push_back(dt.count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: openblas_direct N [repeats] [f32|f64]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string dtype = argc > 3 ? argv[3] : "f32";
  const double s = dtype == "f64" ? time_gemm<double>(n, repeats) : time_gemm<float>(n, repeats);
  std::printf("%.6f\n", s);
  return 0;
}
