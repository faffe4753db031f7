#pragma once
// What the tests of products in memory share (test_memory.cpp on the host, test_memory_device.cpp
// on the GPU): the cases, random matrices, and the check of C against a float64 product.
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

namespace memory_test {

struct Case {
  std::int64_t m, n, k;
  bool ta, tb;
  double alpha, beta;
  std::int64_t pad;  // extra elements at the end of every row (the leading dimension's slack)
};

inline std::vector<Case> cases() {
  return {{1, 1, 1, false, false, 1, 0, 0},        {37, 29, 53, false, false, 1, 0, 0},
          {31, 17, 1, false, false, 1, 0, 0},      {23, 41, 19, true, false, 1, 0, 0},
          {23, 41, 19, false, true, 1, 0, 3},      {64, 48, 96, true, true, -0.5, 2, 0},
          {53, 7, 101, false, false, 1.5, 0.5, 5}, {97, 89, 83, true, true, 1, 1, 1},
          {2, 300, 5, false, false, 1, -1, 0}};
}

template <class T>
std::vector<T> random_matrix(std::int64_t rows, std::int64_t ld, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> x(static_cast<std::size_t>(rows * ld));
  for (auto& v : x) v = static_cast<T>(u(rng));
  return x;
}

// The operands of a case as stored: A (ar x ac), B (br x bc), C (m x n), rows padded.
template <class T>
struct Operands {
  std::int64_t ar, ac, br, bc, lda, ldb, ldc;
  std::vector<T> a, b, c0;
  explicit Operands(const Case& c) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(c.m * 1000003 + c.n * 1009 + c.k));
    ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k, br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
    lda = ac + c.pad, ldb = bc + c.pad, ldc = c.n + c.pad;
    a = random_matrix<T>(ar, lda, rng);
    b = random_matrix<T>(br, ldb, rng);
    c0 = random_matrix<T>(c.m, ldc, rng);
  }
};

// Elements of C = alpha op(A) op(B) + beta C0 (`got`) off the float64 product of the same
// (rounded) inputs by more than 2 gamma_k (|alpha| |op(A)| |op(B)| + |beta C0|) in T's unit
// roundoff plus the reference's own rounding, and padding elements of C's rows that changed.
template <class T>
std::int64_t wrong_elements(const Case& c, const Operands<T>& x, const std::vector<T>& got) {
  const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const double gamma = 2 * (static_cast<double>(c.k) + 2) * u / (1 - (static_cast<double>(c.k) + 2) * u);
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double a = x.a[static_cast<std::size_t>(c.ta ? p * x.lda + i : i * x.lda + p)];
        const double b = x.b[static_cast<std::size_t>(c.tb ? j * x.ldb + p : p * x.ldb + j)];
        exact += a * b;
        magnitude += std::fabs(a * b);
      }
      const double old = x.c0[static_cast<std::size_t>(i * x.ldc + j)];
      const double want = c.alpha * exact + c.beta * old;
      const double bound = gamma * (std::fabs(c.alpha) * magnitude + std::fabs(c.beta * old)) + u * std::fabs(want);
      if (!(std::fabs(got[static_cast<std::size_t>(i * x.ldc + j)] - want) <= bound)) ++bad;
    }
    for (std::int64_t j = c.n; j < x.ldc; ++j)
      if (got[static_cast<std::size_t>(i * x.ldc + j)] != x.c0[static_cast<std::size_t>(i * x.ldc + j)]) ++bad;
  }
  return bad;
}

// Complex products: op 'N', 'T' or 'C' per operand, complex alpha and beta.
struct ComplexCase {
  std::int64_t m, n, k;
  char op_a, op_b;
  std::complex<double> alpha, beta;
  std::int64_t pad;
};

inline std::vector<ComplexCase> complex_cases() {
  std::vector<ComplexCase> all;
  const std::complex<double> one(1, 0), zero(0, 0), alpha(0.5, -1.25), beta(-1, 2);
  for (const char op_a : {'N', 'T', 'C'})
    for (const char op_b : {'N', 'T', 'C'}) all.push_back({37, 29, 53, op_a, op_b, alpha, beta, op_a == 'C' ? 3 : 0});
  all.push_back({1, 1, 1, 'N', 'N', one, zero, 0});
  all.push_back({31, 17, 1, 'C', 'N', one, zero, 2});
  all.push_back({97, 89, 83, 'T', 'C', zero, beta, 1});
  all.push_back({2, 300, 5, 'N', 'T', alpha, one, 0});
  return all;
}

template <class T>  // std::complex<float> or std::complex<double>
struct ComplexOperands {
  std::int64_t ar, ac, br, bc, lda, ldb, ldc;
  std::vector<T> a, b, c0;
  explicit ComplexOperands(const ComplexCase& c) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(c.m * 1000003 + c.n * 1009 + c.k + c.op_a * 7 + c.op_b));
    const bool ta = c.op_a != 'N', tb = c.op_b != 'N';
    ar = ta ? c.k : c.m, ac = ta ? c.m : c.k, br = tb ? c.n : c.k, bc = tb ? c.k : c.n;
    lda = ac + c.pad, ldb = bc + c.pad, ldc = c.n + c.pad;
    const auto fill = [&](std::int64_t rows, std::int64_t ld) {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      std::vector<T> x(static_cast<std::size_t>(rows * ld));
      for (auto& v : x) v = T(static_cast<typename T::value_type>(u(rng)), static_cast<typename T::value_type>(u(rng)));
      return x;
    };
    a = fill(ar, lda);
    b = fill(br, ldb);
    c0 = fill(c.m, ldc);
  }
};

// As wrong_elements, for a complex product: each part of C within 2 gamma_{2k+2} of the
// complex128 product (each part is a sum of 2k real products, |a_r b_r| + |a_i b_i| <= |a| |b|).
template <class T>
std::int64_t wrong_complex_elements(const ComplexCase& c, const ComplexOperands<T>& x, const std::vector<T>& got) {
  using C = std::complex<double>;
  const double u = sizeof(T) == 8 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const double k2 = 2 * static_cast<double>(c.k) + 2;
  const double gamma = 2 * k2 * u / (1 - k2 * u);
  const auto op = [](char o, C v) { return o == 'C' ? std::conj(v) : v; };
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      C exact = 0;
      double magnitude = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const C a = op(c.op_a, C(x.a[static_cast<std::size_t>(c.op_a != 'N' ? p * x.lda + i : i * x.lda + p)]));
        const C b = op(c.op_b, C(x.b[static_cast<std::size_t>(c.op_b != 'N' ? j * x.ldb + p : p * x.ldb + j)]));
        exact += a * b;
        magnitude += std::abs(a) * std::abs(b);
      }
      const C old(x.c0[static_cast<std::size_t>(i * x.ldc + j)]);
      const C want = c.alpha * exact + c.beta * old;
      const double bound = gamma * (std::abs(c.alpha) * magnitude + std::abs(c.beta * old)) + 2 * u * std::abs(want);
      const C have(got[static_cast<std::size_t>(i * x.ldc + j)]);
      if (!(std::fabs(have.real() - want.real()) <= bound && std::fabs(have.imag() - want.imag()) <= bound)) ++bad;
    }
    for (std::int64_t j = c.n; j < x.ldc; ++j)
      if (got[static_cast<std::size_t>(i * x.ldc + j)] != x.c0[static_cast<std::size_t>(i * x.ldc + j)]) ++bad;
  }
  return bad;
}

}  // namespace memory_test
