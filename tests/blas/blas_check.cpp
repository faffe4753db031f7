// The CPU kernels' BLAS call against the reference loop, on odd shapes in both precisions:
// proves that the BLAS this build found (cmake/TesseraBlas.cmake, any BLA_VENDOR) links and
// computes. Prints the BLAS; exit 0 when every product agrees, 1 otherwise.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu_gemm.hpp"

namespace {

template <class T>
bool agrees(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(m * 1000003 + n * 1009 + k));
  std::uniform_real_distribution<T> dist(-1, 1);
  std::vector<T> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (T& x : a) x = dist(rng);
  for (T& x : b) x = dist(rng);
  std::vector<T> got(static_cast<std::size_t>(m * n)), want(got.size());
  tessera::kernels::openblas_gemm<T>(m, n, k, a.data(), b.data(), got.data());
  tessera::kernels::cpu_naive_gemm<T>(m, n, k, a.data(), b.data(), want.data());
  // |a|, |b| <= 1: each element's rounding error is at most about 2 k u.
  const double bound = 4.0 * static_cast<double>(k) * std::numeric_limits<T>::epsilon();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
  std::printf("%s %lldx%lldx%lld: max |error| %.3g (bound %.3g)\n", sizeof(T) == 4 ? "f32" : "f64",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), worst, bound);
  return worst <= bound;
}

}  // namespace

int main() {
  std::printf("BLAS: %s (%s)\n", tessera::kernels::blas_name(), tessera::kernels::openblas_config_string());
  bool ok = true;
  for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{1, 1, 1}, {31, 29, 37}, {67, 1, 45}, {130, 97, 211}}) {
    ok = agrees<float>(m, n, k) && ok;
    ok = agrees<double>(m, n, k) && ok;
  }
  std::puts(ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
