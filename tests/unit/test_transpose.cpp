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
#include "temp_dir.hpp"

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

TEST_CASE("read_operand_block: blocks of a stored matrix's transpose, in the transpose's coordinates") {
  const tessera::test::TempDir dir("tessera-operand-test");
  const DatasetRef ref{dir.file("s.h5"), "/S"};
  const std::int64_t rows = 7, cols = 5;  // stored 7 x 5: the operand is 5 x 7
  std::vector<double> stored(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      stored[static_cast<std::size_t>(i * cols + j)] = static_cast<double>(i * 100 + j);
  {
    tessera::io::MatrixWriter w(ref, rows, cols, DType::f64, {});
    w.write_block(0, 0, rows, cols, stored.data());
    w.commit();
  }
  const Operand op{ref, true};
  const auto info = tessera::io::inspect_operand(op);
  CHECK(info.rows == cols);
  CHECK(info.cols == rows);
  // Blocks of the 5 x 7 operand: whole, inner, one row, one column, one element.
  const auto [r0, nr, c0, nc] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t, std::int64_t>(
      {{0, 5, 0, 7}, {1, 3, 2, 4}, {4, 1, 0, 7}, {0, 5, 6, 1}, {3, 1, 5, 1}}));
  CAPTURE(r0, nr, c0, nc);
  std::vector<double> out(static_cast<std::size_t>(nr * nc), -1);
  tessera::io::read_operand_block(op, r0, nr, c0, nc, DType::f64, out.data());
  bool same = true;
  for (std::int64_t i = 0; i < nr; ++i)
    for (std::int64_t j = 0; j < nc; ++j)  // operand (r, c) is stored (c, r)
      same = same && out[static_cast<std::size_t>(i * nc + j)] == static_cast<double>((c0 + j) * 100 + r0 + i);
  CHECK(same);
  std::vector<float> out32(out.size(), -1);
  tessera::io::read_operand_block(op, r0, nr, c0, nc, DType::f32, out32.data());
  CHECK(static_cast<double>(out32.back()) == out.back());
}

TEST_CASE("transpose: into columns of a wider matrix (ld_out)") {
  const std::int64_t rows = 3, cols = 5, ld = 9, offset = 4;  // in 3 x 5 -> columns 4..6 of a 5 x 9
  std::vector<double> in(static_cast<std::size_t>(rows * cols)), out(static_cast<std::size_t>(cols * ld), -1.0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
  tessera::io::transpose(in.data(), rows, cols, sizeof(double), out.data() + offset, ld);
  bool same = true;
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t j = 0; j < ld; ++j) {
      const double want =
          j >= offset && j < offset + rows ? in[static_cast<std::size_t>((j - offset) * cols + c)] : -1.0;
      same = same && out[static_cast<std::size_t>(c * ld + j)] == want;
    }
  CHECK(same);
  // A single row of `in` into a column of the wider matrix: not contiguous, no copy.
  std::vector<double> column(static_cast<std::size_t>(cols * ld), -1.0);
  tessera::io::transpose(in.data(), 1, cols, sizeof(double), column.data() + 2, ld);
  CHECK(column[2] == in[0]);
  CHECK(column[static_cast<std::size_t>(ld + 2)] == in[1]);
  CHECK(column[3] == -1.0);
}
