// io::count_nonfinite: every NaN and Inf found, nothing else, at any place of a long array (the
// vectorized body and its tail), in float32 and float64.
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "io/nonfinite.hpp"

using tessera::DType;

namespace {

template <class T>
T from_bits(std::uint64_t bits) {
  T v;
  if constexpr (sizeof(T) == 4) {
    const auto b = static_cast<std::uint32_t>(bits);
    std::memcpy(&v, &b, 4);
  } else {
    std::memcpy(&v, &bits, 8);
  }
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("count_nonfinite finds each NaN and Inf and nothing else", "[io][nonfinite]", float, double) {
  using T = TestType;
  const DType dtype = sizeof(T) == 4 ? DType::f32 : DType::f64;
  using L = std::numeric_limits<T>;
  // Finite extremes: never counted.
  const std::vector<T> finite = {T(0), -T(0), L::max(), L::lowest(), L::min(), L::denorm_min(), -L::denorm_min(),
                                 T(1), T(-1)};
  // NaN and Inf in every form: signs, quiet and signalling, payloads.
  std::vector<T> bad = {L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(), L::signaling_NaN()};
  bad.push_back(sizeof(T) == 4 ? from_bits<T>(0x7f800001u) : from_bits<T>(0x7ff0000000000001ull));  // lowest payload
  bad.push_back(sizeof(T) == 4 ? from_bits<T>(0xffffffffu) : from_bits<T>(0xffffffffffffffffull));  // all ones
  for (const std::int64_t n : {1, 7, 64, 1003}) {
    std::vector<T> x(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      x[static_cast<std::size_t>(i)] = finite[static_cast<std::size_t>(i) % finite.size()];
    REQUIRE(tessera::io::count_nonfinite(x.data(), dtype, 1, n, 0, 0, n).count == 0);
    for (const T v : bad)
      for (const std::int64_t at : {std::int64_t{0}, n / 2, n - 1}) {
        std::vector<T> y = x;
        y[static_cast<std::size_t>(at)] = v;
        const auto c = tessera::io::count_nonfinite(y.data(), dtype, 1, n, 0, 0, n);
        REQUIRE(c.count == 1);
        REQUIRE(c.first == static_cast<double>(at));
      }
  }
}
