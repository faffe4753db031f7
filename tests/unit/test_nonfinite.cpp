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

// NonfiniteCount::add_half on 16-bit floats as stored (a C rounded on the GPU): float16's and
// bfloat16's NaN and Inf in every form found, and nothing else (their largest finite values,
// subnormals, signed zeros), at any place of the 64-bit words the scan tests four at a time, its
// tail, a start that is not 8-byte aligned, and a large array split over threads.
TEST_CASE("add_half finds each NaN and Inf of float16 and bfloat16 and nothing else", "[io][nonfinite]") {
  for (const bool bf16 : {false, true}) {
    INFO((bf16 ? "bfloat16" : "float16"));
    const std::vector<std::uint16_t> finite =
        bf16 ? std::vector<std::uint16_t>{0x0000, 0x8000, 0x7f7f, 0xff7f, 0x0001, 0x8001, 0x3f80, 0x0080}
             : std::vector<std::uint16_t>{0x0000, 0x8000, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x3c00, 0x0400};
    const std::vector<std::uint16_t> bad =
        bf16 ? std::vector<std::uint16_t>{0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffff}
             : std::vector<std::uint16_t>{0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xffff};
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{4}, std::int64_t{5}, std::int64_t{64},
                                 std::int64_t{1003}, std::int64_t{20} << 20}) {  // (the last: 40 MiB, two threads)
      const bool large = n > 4096;
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {  // (2 bytes off an 8-byte boundary)
        std::vector<std::uint16_t> storage(static_cast<std::size_t>(n) + offset);
        std::uint16_t* x = storage.data() + offset;
        for (std::int64_t i = 0; i < n; ++i) x[i] = finite[static_cast<std::size_t>(i) % finite.size()];
        tessera::io::NonfiniteCount none;
        none.add_half(x, bf16, 1, n, 0, 0, n);
        REQUIRE(none.count == 0);
        for (std::size_t b = 0; b < bad.size(); b += large ? 2 : 1)
          for (const std::int64_t at : {std::int64_t{0}, n / 2, n - 1}) {
            const std::uint16_t v = bad[b], kept = x[at];
            x[at] = v;
            tessera::io::NonfiniteCount c;
            c.add_half(x, bf16, 1, n, 0, 0, n);
            x[at] = kept;
            REQUIRE(c.count == 1);
            REQUIRE(c.first == static_cast<double>(at));
          }
      }
    }
    // Placed in a larger matrix: the first as a row-major index of the whole (row 3, col 5 of a
    // 2 x 4 block at (2, 4) of a matrix 10 wide).
    std::vector<std::uint16_t> block(8, finite[6]);
    block[1 * 4 + 1] = bad[0];
    block[1 * 4 + 3] = bad[2];
    tessera::io::NonfiniteCount c;
    c.add_half(block.data(), bf16, 2, 4, 2, 4, 10);
    CHECK(c.count == 2);
    CHECK(c.first == 3.0 * 10 + 5);
  }
}
