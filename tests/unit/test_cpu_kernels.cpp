// CPU kernels against a float64 reference, on odd shapes, K = 1 and 1x1x1, float and double.
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/cpu_gemm.hpp"

namespace {

template <class T>
constexpr tessera::DType dtype_of() {
  return sizeof(T) == 4 ? tessera::DType::f32 : tessera::DType::f64;
}

// `kernel(m, n, k, a, b, c)`: a kernel's function, or a registry entry's run<T>.
template <class T, class Kernel>
void check_kernel(Kernel kernel, std::int64_t m, std::int64_t n, std::int64_t k) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(m * 1000003 + n * 1009 + k));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (auto& x : a) x = static_cast<T>(u(rng));
  for (auto& x : b) x = static_cast<T>(u(rng));
  std::vector<T> c(static_cast<std::size_t>(m * n), std::numeric_limits<T>::quiet_NaN());  // poison
  kernel(m, n, k, a.data(), b.data(), c.data());
  const double bound = 2 * tessera::gamma_bound(dtype_of<T>(), k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
        ref += x;
        mag += std::fabs(x);
      }
      const double got = static_cast<double>(c[i * n + j]);
      INFO("element (" << i << "," << j << ") of " << m << "x" << n << "x" << k);
      REQUIRE(std::isfinite(got));
      REQUIRE(std::fabs(got - ref) <= bound * mag + 1e-300);
    }
}

}  // namespace

TEMPLATE_TEST_CASE("CPU kernels match a float64 reference", "[cpu]", float, double) {
  const auto [m, n, k] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t>(
      {{1, 1, 1}, {7, 13, 5}, {129, 257, 65}, {33, 17, 1}, {1, 100, 300}, {64, 64, 64}, {65, 63, 130}}));
  SECTION("cpu-naive") { check_kernel<TestType>(tessera::kernels::cpu_naive_gemm<TestType>, m, n, k); }
  SECTION("cpu-tiled") { check_kernel<TestType>(tessera::kernels::cpu_tiled_gemm<TestType>, m, n, k); }
  SECTION("openblas") { check_kernel<TestType>(tessera::kernels::openblas_gemm<TestType>, m, n, k); }
  // Each kernel of the registry, as the CPU backend and `bench` run it (by name).
  for (const tessera::kernels::CpuKernel& kernel : tessera::kernels::cpu_kernels()) {
    INFO("registry kernel " << kernel.name);
    const auto run = [&kernel](std::int64_t m_, std::int64_t n_, std::int64_t k_, const TestType* a, const TestType* b,
                               TestType* c) { kernel.run<TestType>(m_, n_, k_, a, b, c); };
    check_kernel<TestType>(run, m, n, k);
  }
}

TEST_CASE("the CPU kernel registry: the default first, each name once, found by name and no other", "[cpu]") {
  const auto names = tessera::kernels::cpu_kernel_names();
  REQUIRE(names == std::vector<std::string>{"openblas", "cpu-tiled", "cpu-naive"});
  for (const auto& name : names) CHECK(tessera::kernels::find_cpu_kernel(name)->name == name);
  CHECK(tessera::kernels::find_cpu_kernel("auto") == nullptr);  // resolved before a backend sees it
  CHECK(tessera::kernels::find_cpu_kernel("tiled32") == nullptr);
}
