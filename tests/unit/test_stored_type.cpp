// io/stored_type.hpp: C stored as float16 / bfloat16 (or float32 from float64): every finite half
// round-trips, midpoints round to even, float64 inputs round once (not twice), overflow becomes
// Inf and is counted by its place, and the HDF5 type is the one tessera's reader takes.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include <hdf5.h>

#include "io/stored_type.hpp"

using namespace tessera;
using io::Stored;

TEST_CASE("every finite float16 and bfloat16 round-trips; midpoints round to even", "[io][stored]") {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float v16 = io::from_f16(bits), vb = io::from_bf16(bits);
    if (std::isfinite(v16)) REQUIRE(io::to_f16(v16) == bits);
    if (std::isfinite(vb)) REQUIRE(io::to_bf16(vb) == bits);
    if (std::isnan(v16)) REQUIRE(std::isnan(io::from_f16(io::to_f16(v16))));
    if (std::isnan(vb)) REQUIRE(std::isnan(io::from_bf16(io::to_bf16(vb))));
  }
  // Between consecutive positive finite values: the midpoint goes to the even one, a hair off it
  // to the nearer (float16 and bfloat16 values and their midpoints are exact in float).
  for (std::uint16_t a = 0; a < 0x7bffu; ++a) {
    const float lo = io::from_f16(a), hi = io::from_f16(static_cast<std::uint16_t>(a + 1));
    const float mid = lo + (hi - lo) / 2;
    REQUIRE(io::to_f16(mid) == ((a & 1u) ? a + 1 : a));
    REQUIRE(io::to_f16(std::nextafter(mid, hi)) == a + 1);
    REQUIRE(io::to_f16(std::nextafter(mid, lo)) == a);
    REQUIRE(io::to_f16(-mid) == (((a & 1u) ? a + 1 : a) | 0x8000));
  }
  for (std::uint16_t a = 0; a < 0x7f7fu; a = static_cast<std::uint16_t>(a + 97)) {
    const float lo = io::from_bf16(a), hi = io::from_bf16(static_cast<std::uint16_t>(a + 1));
    const float mid = lo + (hi - lo) / 2;
    REQUIRE(io::to_bf16(mid) == ((a & 1u) ? a + 1 : a));
    REQUIRE(io::to_bf16(std::nextafter(mid, hi)) == a + 1);
  }
  CHECK(io::to_f16(65504.0f) == 0x7bff);
  CHECK(io::to_f16(65519.99f) == 0x7bff);
  CHECK(io::to_f16(65520.0f) == 0x7c00);  // the midpoint to 2^16 rounds to even: Inf
  CHECK(io::to_f16(-1e30f) == 0xfc00);
  CHECK(io::to_f16(0x1p-25f) == 0x0000);    // half of the smallest subnormal: ties to even, 0
  CHECK(io::to_f16(0x1.8p-25f) == 0x0001);  // above it
  CHECK(io::to_bf16(3.4e38f) == 0x7f80);    // beyond bfloat16's largest finite value
}

TEST_CASE("float64 rounds to float16 and bfloat16 once, not through float's rounding", "[io][stored]") {
  // 1 + 2^-11 is float16's midpoint between 1 and 1 + 2^-10; a float64 just above it must go up.
  // Rounded to float first, it would land on the midpoint and then go down to even (1.0).
  const double above = 1.0 + 0x1p-11 + 0x1p-40;
  CHECK(static_cast<float>(above) == 1.0f + 0x1p-11f);
  CHECK(io::to_f16(above) == io::to_f16(1.0f + 0x1p-10f));
  CHECK(io::to_f16(1.0 + 0x1p-11) == io::to_f16(1.0f));  // the midpoint itself: even
  const double bf_above = 1.0 + 0x1p-8 + 0x1p-40;
  CHECK(io::to_bf16(bf_above) == io::to_bf16(1.0f + 0x1p-7f));
  CHECK(io::to_f16(std::numeric_limits<double>::infinity()) == 0x7c00);
  CHECK(io::to_f16(1e300) == 0x7c00);
}

TEST_CASE("a block converted: overflow becomes Inf and is counted where it lies", "[io][stored]") {
  const std::vector<float> block = {1.0f, 70000.0f, -2.5f, std::numeric_limits<float>::infinity(), 65520.0f, 0.1f};
  std::vector<std::uint16_t> out(6);
  io::NonfiniteCount overflow;
  // A 2 x 3 block at (4, 10) of a C 20 columns wide.
  io::convert_block(block.data(), DType::f32, 2, 3, Stored::f16, out.data(), &overflow, 4, 10, 20);
  CHECK(out[0] == 0x3c00);
  CHECK(out[1] == 0x7c00);
  CHECK(out[3] == 0x7c00);
  CHECK(overflow.count == 2);  // 70000 and 65520; the Inf that was one already is not an overflow
  CHECK(overflow.first == 4 * 20 + 11);
  std::vector<float> narrowed(2);
  const std::vector<double> wide = {1e39, 0.5};
  io::NonfiniteCount none;
  io::convert_block(wide.data(), DType::f64, 1, 2, Stored::f32, narrowed.data(), &none, 0, 0, 2);
  CHECK(std::isinf(narrowed[0]));
  CHECK(narrowed[1] == 0.5f);
  CHECK(none.count == 1);
  CHECK_FALSE(io::converts(Stored::same, DType::f32));
  CHECK_FALSE(io::converts(Stored::f32, DType::f32));
  CHECK(io::converts(Stored::bf16, DType::f64));
  CHECK(io::stored_size(Stored::bf16, DType::f64) == 2);
  CHECK(io::stored_name(Stored::same, DType::f64) == "float64");
}

TEST_CASE("the stored types' HDF5 descriptions are those the reader takes", "[io][stored]") {
  for (const auto& [s, exponent, mantissa, bias] :
       {std::tuple{Stored::f16, 5u, 10u, 15u}, std::tuple{Stored::bf16, 8u, 7u, 127u}}) {
    const hid_t t = io::stored_file_type(s, DType::f32);
    REQUIRE(t >= 0);
    std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    REQUIRE(H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) >= 0);
    CHECK(H5Tget_size(t) == 2);
    CHECK(spos == 15);
    CHECK(esize == exponent);
    CHECK(msize == mantissa);
    CHECK(mpos == 0);
    CHECK(epos == mantissa);
    CHECK(H5Tget_ebias(t) == bias);
    // HDF5's own conversion of the stored bits reads back the value (h5py reads float16 so).
    const std::uint16_t bits = s == Stored::f16 ? io::to_f16(-3.140625f) : io::to_bf16(-3.140625f);
    float back = 0;
    std::uint16_t buffer[2] = {bits, 0};
    REQUIRE(H5Tconvert(t, H5T_NATIVE_FLOAT, 1, buffer, nullptr, H5P_DEFAULT) >= 0);
    std::memcpy(&back, buffer, sizeof back);
    CHECK(back == (s == Stored::f16 ? io::from_f16(bits) : io::from_bf16(bits)));
    H5Tclose(t);
  }
}

TEST_CASE("a block converted to float16 is to_f16 of each element, whatever path converts it", "[io][stored]") {
  // Every magnitude float16 has (subnormals, normals, the edge of its range), midpoints included,
  // in rows of 1003 (the vector path's eight at a time and its tail).
  std::vector<float> block;
  std::uint32_t state = 12345;
  for (int i = 0; i < 3 * 1003; ++i) {
    state = state * 1664525u + 1013904223u;
    const float unit = static_cast<float>(state >> 8) / 16777216.0f;          // [0, 1)
    const float scale = std::ldexp(1.0f, static_cast<int>(state % 44) - 26);  // 2^-26 .. 2^17
    block.push_back((state & 1u ? -1.0f : 1.0f) * unit * scale);
  }
  block[5] = io::from_f16(0x3c00) + (io::from_f16(0x3c01) - io::from_f16(0x3c00)) / 2;  // a midpoint
  block[17] = std::numeric_limits<float>::quiet_NaN();
  block[1002] = 65520.0f;
  std::vector<std::uint16_t> out(block.size());
  io::NonfiniteCount overflow;
  io::convert_block(block.data(), DType::f32, 3, 1003, Stored::f16, out.data(), &overflow, 0, 0, 1003);
  std::int64_t expected_overflow = 0;
  for (std::size_t i = 0; i < block.size(); ++i) {
    if (std::isnan(block[i])) {
      CHECK(std::isnan(io::from_f16(out[i])));
      continue;
    }
    REQUIRE(out[i] == io::to_f16(block[i]));
    if (std::isinf(io::from_f16(out[i]))) ++expected_overflow;
  }
  CHECK(expected_overflow > 1);  // 2^17-scaled values overflow too
  CHECK(overflow.count == static_cast<double>(expected_overflow));
}

TEST_CASE("half data is widened as HDF5 would, and only h5py's float16 and tessera's bfloat16 are", "[io][stored]") {
  // Every bit pattern, in a block whose length is not a multiple of eight (the F16C path's tail),
  // widened to float32 and float64 against HDF5's own conversion of the same bits.
  for (const Stored s : {Stored::f16, Stored::bf16}) {
    std::vector<std::uint16_t> bits(0x10000u + 3);
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint16_t>(i * 40503u);
    std::vector<float> f(bits.size());
    std::vector<double> d(bits.size());
    io::widen_half(bits.data(), bits.size(), s, DType::f32, f.data());
    io::widen_half(bits.data(), bits.size(), s, DType::f64, d.data());
    const hid_t t = io::stored_file_type(s, DType::f32);
    REQUIRE(t >= 0);
    CHECK(io::half_file_type(t) == s);
    std::vector<float> converted(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      std::uint16_t one[2] = {bits[i], 0};
      REQUIRE(H5Tconvert(t, H5T_NATIVE_FLOAT, 1, one, nullptr, H5P_DEFAULT) >= 0);
      std::memcpy(&converted[i], one, sizeof(float));
    }
    H5Tclose(t);
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const float want = s == Stored::f16 ? io::from_f16(bits[i]) : io::from_bf16(bits[i]);
      if (std::isnan(want)) {
        REQUIRE(std::isnan(f[i]));
        REQUIRE(std::isnan(d[i]));
        REQUIRE(std::isnan(converted[i]));
        continue;
      }
      REQUIRE(f[i] == want);
      REQUIRE(d[i] == static_cast<double>(want));
      REQUIRE(converted[i] == want);
    }
  }
  // h5py's float16 (IEEE_F32LE with the fields of binary16) is recognised; a big-endian half, a
  // 16-bit float of other fields, an integer and float32 are not.
  const hid_t h5py_f16 = H5Tcopy(H5T_IEEE_F32LE);
  REQUIRE(H5Tset_fields(h5py_f16, 15, 10, 5, 0, 10) >= 0);
  REQUIRE(H5Tset_size(h5py_f16, 2) >= 0);
  REQUIRE(H5Tset_ebias(h5py_f16, 15) >= 0);
  CHECK(io::half_file_type(h5py_f16) == Stored::f16);
  const hid_t big = H5Tcopy(h5py_f16);
  REQUIRE(H5Tset_order(big, H5T_ORDER_BE) >= 0);
  CHECK(io::half_file_type(big) == Stored::same);
  const hid_t other = H5Tcopy(h5py_f16);
  REQUIRE(H5Tset_fields(other, 15, 9, 6, 0, 9) >= 0);
  CHECK(io::half_file_type(other) == Stored::same);
  CHECK(io::half_file_type(H5T_STD_I16LE) == Stored::same);
  CHECK(io::half_file_type(H5T_IEEE_F32LE) == Stored::same);
  for (const hid_t t : {h5py_f16, big, other}) H5Tclose(t);
}
