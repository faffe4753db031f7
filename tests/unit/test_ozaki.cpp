// kernels/ozaki.hpp: the Ozaki scheme II's plan and its host reference (issue 45's groundwork):
// coprime moduli, a plan whose rebuilt products cannot wrap, exact results for integer data,
// the documented bound held on uniform data and on rows spread over 2^+-30 (against a product
// summed in binary128), NaN/Inf refused, odd shapes and K = 1.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/ozaki.hpp"

namespace oz = tessera::kernels::ozaki;

namespace {

__extension__ typedef unsigned __int128 u128;  // (GCC and Clang on 64-bit targets)

struct Product {
  std::int64_t m, n, k;
  std::vector<double> a, b;
};

Product random_product(std::int64_t m, std::int64_t n, std::int64_t k, int spread, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  Product p{m, n, k, std::vector<double>(static_cast<std::size_t>(m * k)),
            std::vector<double>(static_cast<std::size_t>(k * n))};
  for (double& x : p.a) x = std::ldexp(unit(gen), spread ? exponent(gen) : 0);
  for (double& x : p.b) x = std::ldexp(unit(gen), spread ? exponent(gen) : 0);
  return p;
}

// C_ij summed in binary128 (every product of two doubles is exact in it).
__float128 reference(const Product& p, std::int64_t i, std::int64_t j) {
  __float128 sum = 0;
  for (std::int64_t h = 0; h < p.k; ++h)
    sum += static_cast<__float128>(p.a[static_cast<std::size_t>(i * p.k + h)]) *
           static_cast<__float128>(p.b[static_cast<std::size_t>(h * p.n + j)]);
  return sum;
}

// Every element within error_bound (row and column 2-norms) plus C's own rounding.
void check_bound(const oz::Plan& plan, const Product& p) {
  std::vector<double> c(static_cast<std::size_t>(p.m * p.n), -7.0);
  REQUIRE(oz::gemm_host(plan, p.m, p.n, p.k, p.a.data(), p.k, p.b.data(), p.n, c.data(), p.n));
  double worst = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      double na = 0, nb = 0;
      for (std::int64_t h = 0; h < p.k; ++h) {
        na = std::hypot(na, p.a[static_cast<std::size_t>(i * p.k + h)]);
        nb = std::hypot(nb, p.b[static_cast<std::size_t>(h * p.n + j)]);
      }
      const __float128 ref = reference(p, i, j);
      const double err =
          std::fabs(static_cast<double>(static_cast<__float128>(c[static_cast<std::size_t>(i * p.n + j)]) - ref));
      const double bound = oz::error_bound(plan, na, nb) + std::ldexp(std::fabs(static_cast<double>(ref)), -53) +
                           std::numeric_limits<double>::denorm_min();
      INFO("C(" << i << ", " << j << ") error " << err << " bound " << bound << ", " << plan.n << " moduli, a "
                << plan.a);
      REQUIRE(err <= bound);
      worst = std::max(worst, err / bound);
    }
  // The bound is not slack beyond reason: with few moduli the error reaches a fair part of it.
  if (plan.a < 30) CHECK(worst > 1e-4);
}

}  // namespace

TEST_CASE("ozaki: the moduli are pairwise coprime int8-sized numbers, 256 first", "[ozaki]") {
  const std::vector<int>& ps = oz::moduli();
  REQUIRE(ps.size() >= 16);
  CHECK(ps[0] == 256);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CHECK(ps[i] <= 256);
    CHECK(ps[i] > 128);
    for (std::size_t j = 0; j < i; ++j) CHECK(std::gcd(ps[i], ps[j]) == 1);
  }
  CHECK(oz::max_moduli() == 20);
  REQUIRE(ps.size() >= static_cast<std::size_t>(oz::max_moduli()));
  CHECK(ps[15] == 193);
}

TEST_CASE("ozaki: the rebuild's constants are the CRT's, modulo 2^128", "[ozaki]") {
  for (const int n : {1, 2, 15, 16, 20}) {
    const oz::Rebuild r = oz::rebuild_for(n);
    REQUIRE(r.n == n);
    u128 p_all = 1;
    for (int l = 0; l < n; ++l) p_all *= static_cast<unsigned>(r.p[l]);
    CHECK(r.p_lo == static_cast<std::uint64_t>(p_all));
    CHECK(r.p_hi == static_cast<std::uint64_t>(p_all >> 64));
    for (int l = 0; l < n; ++l) {
      INFO(n << " moduli, l " << l);
      // M_l p_l = P (modulo 2^128 too), and M_l inv_l = 1 modulo p_l (M_l mod p_l from the small
      // moduli, since M_l itself may exceed 2^128).
      const u128 ml = (static_cast<u128>(r.m_hi[l]) << 64) | r.m_lo[l];
      CHECK(ml * static_cast<unsigned>(r.p[l]) == p_all);
      int ml_mod = 1;
      for (int j = 0; j < n; ++j)
        if (j != l) ml_mod = ml_mod * (r.p[j] % r.p[l]) % r.p[l];
      CHECK(ml_mod * r.inv[l] % r.p[l] == 1 % r.p[l]);
      CHECK(r.recip[l] == 1.0 / r.p[l]);
    }
  }
  CHECK_THROWS_AS(oz::rebuild_for(0), std::invalid_argument);
  CHECK_THROWS_AS(oz::rebuild_for(21), std::invalid_argument);
}

TEST_CASE("ozaki: a plan leaves room for the whole product (K 2^(a+b) < P / 2)", "[ozaki]") {
  for (int n = 4; n <= oz::max_moduli(); ++n)
    for (const std::int64_t k :
         {std::int64_t{1}, std::int64_t{2}, std::int64_t{1000}, std::int64_t{65536}, oz::kMaxK}) {
      oz::Plan plan;
      try {
        plan = oz::plan_for(n, k);
      } catch (const std::invalid_argument&) {
        continue;  // too few moduli for this K
      }
      INFO(n << " moduli, K " << k);
      CHECK(plan.a + plan.b < plan.log2_p - 1);                    // |C'| <= 2^(a+b) <= P / 4
      CHECK(plan.a + plan.b <= 126);                               // |C'| < 2^127
      CHECK(2 * plan.a >= std::log2(static_cast<double>(k)) + 2);  // room for the rounding's sqrt(K) / 2
      CHECK(plan.a <= 62);
      CHECK(plan.b <= 62);
    }
  CHECK_THROWS_AS(oz::plan_for(0, 10), std::invalid_argument);
  CHECK_THROWS_AS(oz::plan_for(oz::max_moduli() + 1, 10), std::invalid_argument);
  CHECK_THROWS_AS(oz::plan_for(8, oz::kMaxK + 1), std::invalid_argument);
  CHECK_THROWS_AS(oz::plan_for(1, 1 << 16), std::invalid_argument);  // 8 bits cannot hold K alone
  // More bits, more moduli; the answer's plan has them, the one before does not.
  int last = 0;
  for (int bits = 10; bits <= 50; bits += 10) {
    const int n = oz::moduli_for_bits(bits, 4096);
    REQUIRE(n > 0);
    CHECK(n >= last);
    last = n;
    const oz::Plan plan = oz::plan_for(n, 4096);
    CHECK(std::min(plan.a, plan.b) >= bits);
    if (n > 1) {
      try {
        const oz::Plan fewer = oz::plan_for(n - 1, 4096);
        CHECK(std::min(fewer.a, fewer.b) < bits);
      } catch (const std::invalid_argument&) {
      }
    }
  }
  CHECK(oz::moduli_for_bits(70, 4096) == 0);  // beyond int64's 62 bits
}

TEST_CASE("ozaki: integer data comes out exact, on odd shapes and K = 1", "[ozaki]") {
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> value(-1000, 1000);
  for (const auto& [m, n, k] :
       {std::tuple{13, 11, 37}, std::tuple{1, 1, 1}, std::tuple{7, 5, 1}, std::tuple{3, 17, 64}}) {
    std::vector<double> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
        c(static_cast<std::size_t>(m * n));
    for (double& x : a) x = value(gen);
    for (double& x : b) x = value(gen);
    a[0] = 0;  // a zero among them
    // 20 moduli (P ~ 2^155: the rebuild wraps modulo 2^128), 16 (P ~ 2^125) and 10.
    for (const int moduli : {oz::max_moduli(), 16, 10}) {
      const oz::Plan plan = oz::plan_for(moduli, k);
      REQUIRE(oz::gemm_host(plan, m, n, k, a.data(), k, b.data(), n, c.data(), n));
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          std::int64_t exact = 0;
          for (int h = 0; h < k; ++h)
            exact += static_cast<std::int64_t>(a[static_cast<std::size_t>(i * k + h)]) *
                     static_cast<std::int64_t>(b[static_cast<std::size_t>(h * n + j)]);
          INFO(m << "x" << n << "x" << k << " C(" << i << ", " << j << "), " << moduli << " moduli");
          REQUIRE(c[static_cast<std::size_t>(i * n + j)] == static_cast<double>(exact));
        }
    }
  }
}

TEST_CASE("ozaki: the documented bound holds on uniform and on spread data, with many or few moduli", "[ozaki]") {
  const Product uniform = random_product(9, 7, 300, 0, 1);
  const Product spread10 = random_product(6, 5, 211, 10, 2);
  const Product spread30 = random_product(5, 8, 97, 30, 3);
  for (const Product* p : {&uniform, &spread10, &spread30})
    for (const int n : {oz::max_moduli(), 16, 15, 9, 6}) check_bound(oz::plan_for(n, p->k), *p);
  // With all the moduli and no spread, the scheme is as accurate as float64 (a >= 53 bits).
  const oz::Plan full = oz::plan_for(oz::max_moduli(), uniform.k);
  CHECK(full.a >= 53);
}

TEST_CASE("ozaki: a NaN or Inf in A or B is refused (the caller runs DGEMM), C untouched", "[ozaki]") {
  Product p = random_product(4, 3, 6, 0, 9);
  const oz::Plan plan = oz::plan_for(8, p.k);
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    for (const bool in_a : {true, false}) {
      Product q = p;
      (in_a ? q.a[5] : q.b[4]) = bad;
      std::vector<double> c(12, 3.0);
      CHECK_FALSE(oz::gemm_host(plan, q.m, q.n, q.k, q.a.data(), q.k, q.b.data(), q.n, c.data(), q.n));
      for (const double x : c) CHECK(x == 3.0);
    }
  }
  // All-zero rows and columns give zeros; K = 0 gives zeros.
  std::fill(p.a.begin(), p.a.begin() + 6, 0.0);
  std::vector<double> c(12, 3.0);
  REQUIRE(oz::gemm_host(plan, p.m, p.n, p.k, p.a.data(), p.k, p.b.data(), p.n, c.data(), p.n));
  for (int j = 0; j < 3; ++j) CHECK(c[static_cast<std::size_t>(j)] == 0.0);
  REQUIRE(oz::gemm_host(plan, p.m, p.n, 0, p.a.data(), p.k, p.b.data(), p.n, c.data(), p.n));
  for (const double x : c) CHECK(x == 0.0);
}

TEST_CASE("ozaki: the moduli for a spread grow with it, do not depend on K, and run out", "[ozaki]") {
  // bits = 53 + guard + ceil(spread), K aside (the norms hold it).
  CHECK(oz::bits_for_spread(1.0, 2) == 56);
  CHECK(oz::bits_for_spread(0.3, 0) == 54);
  CHECK(oz::bits_for_spread(200.0, 0) == 253);             // the caller then finds no plan
  CHECK(oz::moduli_for_spread(0.2, 0.2, 16384, 0) == 14);  // uniform data: a + b >= 108
  CHECK(oz::moduli_for_spread(0.2, 0.2, 65536, 0) == 14);
  CHECK(oz::moduli_for_spread(1.0, 1.0, 16384, 2) == 15);  // a + b >= 112
  CHECK(oz::moduli_for_spread(10.0, 0.0, 16384, 0) == 0);  // 63 bits for A: beyond int64's 62
  // Past 62 bits the guard gives way down to kMinGuard (2): phi 2 and 3 data (the spreads of
  // 24x24x16384 phi-generator data, docs/performance.md) run with 62 bits a side, 17 moduli,
  // instead of DGEMM; one bit more does not.
  CHECK(oz::bits_needed(5.07, 4.56, 4).a == 62);
  CHECK(oz::bits_needed(5.07, 4.56, 4).b == 62);
  CHECK(oz::moduli_for_spread(5.07, 4.56, 16384, 4) == 17);
  CHECK(oz::moduli_for_spread(6.77, 6.38, 16384, 4) == 17);
  CHECK(oz::moduli_for_spread(7.2, 1.0, 16384, 4) == 0);  // 53 + 2 + 8 = 63
  CHECK(oz::bits_needed(7.2, 1.0, 4).a == 0);
  CHECK(oz::bits_needed(1.0, 1.0, 4).a == 58);  // within 62: the guard stays whole
  int last = 0;
  for (const double spread : {0.0, 1.0, 2.0, 3.0, 4.0, 6.0}) {
    const int n = oz::moduli_for_spread(spread, spread, 16384, 2);
    REQUIRE(n > 0);
    CHECK(n >= last);
    last = n;
  }
  CHECK(oz::moduli_for_spread(30.0, 30.0, 16384, 2) == 0);
  CHECK(oz::moduli_for_spread(std::numeric_limits<double>::infinity(), 0.0, 100, 2) == 0);
  CHECK(oz::moduli_for_spread(std::numeric_limits<double>::quiet_NaN(), 0.0, 100, 2) == 0);
}

// The rule's point: with the moduli it picks, the scheme's error on uniform data is no larger than
// a float64 sum's (here a plain loop of fused multiply-adds, as one DGEMM thread sums its dot).
TEST_CASE("ozaki: with the moduli the rule picks, the error is within a float64 sum's", "[ozaki]") {
  const Product p = random_product(6, 6, 4096, 0, 17);
  const int n = oz::moduli_for_spread(1.0, 1.0, p.k, 2);
  REQUIRE(n > 0);
  std::vector<double> c(36);
  REQUIRE(oz::gemm_host(oz::plan_for(n, p.k), p.m, p.n, p.k, p.a.data(), p.k, p.b.data(), p.n, c.data(), p.n));
  double worst_scheme = 0, worst_sum = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (std::int64_t h = 0; h < p.k; ++h)
        sum = std::fma(p.a[static_cast<std::size_t>(i * p.k + h)], p.b[static_cast<std::size_t>(h * p.n + j)], sum);
      const __float128 ref = reference(p, i, j);
      worst_sum = std::max(worst_sum, std::fabs(static_cast<double>(static_cast<__float128>(sum) - ref)));
      worst_scheme = std::max(
          worst_scheme,
          std::fabs(static_cast<double>(static_cast<__float128>(c[static_cast<std::size_t>(i * 6 + j)]) - ref)));
    }
  INFO(n << " moduli: scheme " << worst_scheme << ", float64 sum " << worst_sum);
  CHECK(worst_scheme <= worst_sum);
}

// Where the guard gives way (phi = 2 data: values (u - 1/2) e^(2z), rms/mean about 2^5 per row),
// the rule's 17 moduli still err less than a float64 FMA sum, in the largest relative error.
TEST_CASE("ozaki: phi 2 data, past 62 bits with the guard, err within a float64 sum's", "[ozaki]") {
  const std::int64_t m = 12, n = 12, k = 8192;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> z(0, 1);
  Product p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a.resize(static_cast<std::size_t>(m * k));
  p.b.resize(static_cast<std::size_t>(k * n));
  for (auto& x : p.a) x = (u(gen) - 0.5) * std::exp(2.0 * z(gen));
  for (auto& x : p.b) x = (u(gen) - 0.5) * std::exp(2.0 * z(gen));
  // The pre-pass's spread: max over rows (columns) of log2(rms / mean) of the magnitudes.
  const auto spread = [k](auto at, std::int64_t lines) {
    double worst = 0;
    for (std::int64_t l = 0; l < lines; ++l) {
      double s1 = 0, s2 = 0;
      for (std::int64_t h = 0; h < k; ++h) {
        const double x = at(l, h);
        s1 += std::fabs(x);
        s2 += x * x;
      }
      worst = std::max(worst, std::log2(std::sqrt(s2 / static_cast<double>(k)) / (s1 / static_cast<double>(k))));
    }
    return worst;
  };
  const double spread_a =
      spread([&](std::int64_t i, std::int64_t h) { return p.a[static_cast<std::size_t>(i * k + h)]; }, m);
  const double spread_b =
      spread([&](std::int64_t j, std::int64_t h) { return p.b[static_cast<std::size_t>(h * n + j)]; }, n);
  INFO("spreads 2^" << spread_a << ", 2^" << spread_b);
  REQUIRE(oz::bits_for_spread(std::max(spread_a, spread_b), 4) > 62);  // the guard must give way here
  const int moduli = oz::moduli_for_spread(spread_a, spread_b, k, 4);
  REQUIRE(moduli >= 16);  // 16 here: A asks 61 bits, B 62 of its 63
  std::vector<double> c(static_cast<std::size_t>(m * n));
  REQUIRE(oz::gemm_host(oz::plan_for(moduli, k), m, n, k, p.a.data(), k, p.b.data(), n, c.data(), n));
  double worst_scheme = 0, worst_sum = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t h = 0; h < k; ++h)
        sum = std::fma(p.a[static_cast<std::size_t>(i * k + h)], p.b[static_cast<std::size_t>(h * n + j)], sum);
      const __float128 ref = reference(p, i, j);
      const double mag = std::fabs(static_cast<double>(ref));
      worst_sum = std::max(worst_sum, std::fabs(static_cast<double>(static_cast<__float128>(sum) - ref)) / mag);
      worst_scheme = std::max(
          worst_scheme,
          std::fabs(static_cast<double>(static_cast<__float128>(c[static_cast<std::size_t>(i * n + j)]) - ref)) / mag);
    }
  INFO("largest relative error: scheme " << worst_scheme << ", float64 sum " << worst_sum);
  CHECK(worst_scheme <= worst_sum);
  CHECK(worst_scheme > 0);  // the check above compares two real errors
}
