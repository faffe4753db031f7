// libtessera's products of matrices in memory (tessera::Matrix, multiply(a, b, c, options)),
// through the installed header only, in a process that never initializes MPI: every shape and op
// against a float64 product computed here, and each refusal leaves C as it was.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory_check.hpp"
#include "tessera/tessera.hpp"

namespace {

using memory_test::Case;
using memory_test::Operands;

// One case on the host through `backend`, against the float64 product.
template <class T>
void check_case(const Case& c, const std::string& backend) {
  INFO(c.m << "x" << c.n << "x" << c.k << " ta " << c.ta << " tb " << c.tb << " alpha " << c.alpha << " beta " << c.beta
           << " pad " << c.pad << " " << sizeof(T) * 8 << "-bit, backend " << backend);
  const Operands<T> x(c);
  auto cm = x.c0;
  tessera::Options o;
  o.backend(backend).transpose_a(c.ta).transpose_b(c.tb).alpha(c.alpha).beta(c.beta);
  const tessera::Result r =
      tessera::multiply(tessera::Matrix(x.a.data(), x.ar, x.ac, x.lda), tessera::Matrix(x.b.data(), x.br, x.bc, x.ldb),
                        tessera::Matrix(cm.data(), c.m, c.n, x.ldc), o);
  CHECK(r.m() == c.m);
  CHECK(r.n() == c.n);
  CHECK(r.k() == c.k);
  CHECK(r.dtype() == (sizeof(T) == 4 ? "float32" : "float64"));
  CHECK(r.ranks() == 1);
  CHECK(memory_test::wrong_elements(c, x, cm) == 0);
}

}  // namespace

TEST_CASE("multiply(a, b, c): matrices in memory on every shape, op, alpha, beta and leading dimension") {
  for (const Case& c : memory_test::cases()) {
    check_case<double>(c, "auto");
    check_case<float>(c, "auto");
  }
  check_case<double>({37, 29, 53, true, false, 1, 0, 2}, "cpu");
}

namespace {
template <class T>
void check_complex_case(const memory_test::ComplexCase& c, const std::string& backend) {
  INFO(c.m << "x" << c.n << "x" << c.k << " op " << c.op_a << c.op_b << " alpha " << c.alpha << " beta " << c.beta
           << " pad " << c.pad << " " << sizeof(T) * 8 << "-bit complex, backend " << backend);
  const memory_test::ComplexOperands<T> x(c);
  auto cm = x.c0;
  tessera::Options o;
  o.backend(backend).transpose_a(c.op_a == 'T').transpose_b(c.op_b == 'T').alpha(c.alpha).beta(c.beta);
  o.conjugate_a(c.op_a == 'C').conjugate_b(c.op_b == 'C');
  const tessera::Result r =
      tessera::multiply(tessera::Matrix(x.a.data(), x.ar, x.ac, x.lda), tessera::Matrix(x.b.data(), x.br, x.bc, x.ldb),
                        tessera::Matrix(cm.data(), c.m, c.n, x.ldc), o);
  CHECK(r.dtype() == (sizeof(T) == 8 ? "complex64" : "complex128"));
  CHECK(r.kernel() == (r.backend() == "cpu" ? "openblas" : "cublas"));
  CHECK(memory_test::wrong_complex_elements(c, x, cm) == 0);
}
}  // namespace

TEST_CASE("multiply(a, b, c): complex64 and complex128 on every op (N, T, C), complex alpha and beta") {
  for (const auto& c : memory_test::complex_cases()) {
    check_complex_case<std::complex<float>>(c, "cpu");
    check_complex_case<std::complex<double>>(c, "cpu");
  }
  // Conjugating a real matrix is transposing it.
  const memory_test::Case real{23, 41, 19, true, true, -0.5, 2, 1};
  const memory_test::Operands<double> x(real);
  auto cm = x.c0;
  tessera::multiply(tessera::Matrix(x.a.data(), x.ar, x.ac, x.lda), tessera::Matrix(x.b.data(), x.br, x.bc, x.ldb),
                    tessera::Matrix(cm.data(), real.m, real.n, x.ldc),
                    tessera::Options().backend("cpu").conjugate_a().conjugate_b().alpha(-0.5).beta(2.0));
  CHECK(memory_test::wrong_elements(real, x, cm) == 0);
}

TEST_CASE("multiply(a, b, c): complex refusals name their cause and leave C as it was") {
  using cd = std::complex<double>;
  std::vector<cd> a(6, cd(1, 1)), b(6, cd(1, -1)), c(4, cd(7, 7));
  const std::vector<cd> c0 = c;
  std::vector<double> real_a(6, 1.0), real_b(6, 1.0), real_c(4, 7.0);
  const auto refused = [&](const tessera::Matrix& ma, const tessera::Matrix& mb, const tessera::Matrix& mc,
                           const tessera::Options& o, const std::string& words) {
    INFO("expected a refusal saying: " << words);
    try {
      tessera::multiply(ma, mb, mc, o);
      FAIL("accepted");
    } catch (const tessera::MultiplyError& e) {
      INFO("said: " << e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(c == c0);
    CHECK(real_c == std::vector<double>(4, 7.0));
  };
  const tessera::Matrix A(a.data(), 2, 3), B(b.data(), 3, 2), C(c.data(), 2, 2);
  refused(A, tessera::Matrix(real_b.data(), 3, 2), C, tessera::Options(),
          "they hold complex128, float64 and complex128");
  refused(A, B, C, tessera::Options().backend("cpu").kernel("cpu-tiled"),
          "kernel 'cpu-tiled' multiplies float32 and float64");
  refused(A, B, C, tessera::Options().dtype("f64"), "dtype float64 asked, but the matrices hold complex128");
  refused(tessera::Matrix(real_a.data(), 2, 3), tessera::Matrix(real_b.data(), 3, 2),
          tessera::Matrix(real_c.data(), 2, 2), tessera::Options().alpha(cd(1, 1)),
          "alpha and beta have imaginary parts (1, 0)");
  // An infinite part is refused where it is set, as a real alpha's is (the option alpha-imag's check).
  try {
    tessera::Options().alpha(cd(0, std::numeric_limits<double>::infinity()));
    FAIL("an infinite imaginary part of alpha accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("--alpha-imag: must be a finite number") != std::string::npos);
  }
  b[5] = cd(0, std::numeric_limits<double>::quiet_NaN());
  refused(A, B, C, tessera::Options(),
          "B holds 1 non-finite value(s) (NaN/Inf) in its elements' real and imaginary parts, the first at (2, 1)");
  tessera::multiply(A, B, C, tessera::Options().allow_nonfinite());
  CHECK(std::isnan(c[1].imag()));
  // alpha(double) after alpha(complex) is real again.
  CHECK_NOTHROW(tessera::multiply(tessera::Matrix(real_a.data(), 2, 3), tessera::Matrix(real_b.data(), 3, 2),
                                  tessera::Matrix(real_c.data(), 2, 2), tessera::Options().alpha(cd(1, 1)).alpha(2.0)));
  CHECK(real_c == std::vector<double>(4, 6.0));
}

TEST_CASE("multiply(a, b, c): K = 0 leaves beta C; beta = 0 never reads C") {
  std::vector<double> a, b;  // 3 x 0 and 0 x 4
  std::vector<double> c(12, 2.0);
  tessera::multiply(tessera::Matrix(a.data(), 3, 0), tessera::Matrix(b.data(), 0, 4), tessera::Matrix(c.data(), 3, 4),
                    tessera::Options().beta(0.5));
  for (const double v : c) CHECK(v == 1.0);
  std::vector<double> a1{2.0}, b1{3.0}, c1{std::numeric_limits<double>::quiet_NaN()};
  tessera::multiply(tessera::Matrix(a1.data(), 1, 1), tessera::Matrix(b1.data(), 1, 1),
                    tessera::Matrix(c1.data(), 1, 1), tessera::Options());
  CHECK(c1[0] == 6.0);
}

TEST_CASE("multiply(a, b, c): a refusal names its cause and leaves C as it was") {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, 7.0f);
  const std::vector<float> c0 = c;
  std::vector<double> c64(4, 7.0);
  const auto refused = [&](const tessera::Matrix& ma, const tessera::Matrix& mb, const tessera::Matrix& mc,
                           const tessera::Options& o, const std::string& words) {
    INFO("expected a refusal saying: " << words);
    try {
      tessera::multiply(ma, mb, mc, o);
      FAIL("accepted");
    } catch (const tessera::MultiplyError& e) {
      INFO("said: " << e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(c == c0);
  };
  const tessera::Matrix A(a.data(), 2, 3), B(b.data(), 3, 2), C(c.data(), 2, 2);
  refused(A, tessera::Matrix(b.data(), 2, 3), C, tessera::Options(), "inner dimensions disagree");
  refused(A, B, tessera::Matrix(static_cast<const float*>(c.data()), 2, 2), tessera::Options(), "read-only");
  refused(A, B, tessera::Matrix(c64.data(), 2, 2), tessera::Options(), "one dtype");
  refused(A, B, C, tessera::Options().dtype("f64"), "dtype float64 asked");
  refused(A, B, C, tessera::Options().a("in.h5:/A"), "leave a, b and c empty");
  refused(A, B, tessera::Matrix(c.data(), 3, 2), tessera::Options(), "C is 3x2");
  refused(tessera::Matrix(a.data(), 2, 3, 2), B, C, tessera::Options(), "fewer than its 3 columns");
  refused(A, B, tessera::Matrix(a.data() + 2, 2, 2), tessera::Options(), "C shares memory with A");
  refused(A, B, tessera::Matrix(b.data() + 1, 2, 2), tessera::Options(), "C shares memory with B");
  a[4] = std::numeric_limits<float>::infinity();
  refused(A, B, C, tessera::Options(), "A holds 1 non-finite value(s) (NaN/Inf), the first at (1, 1)");
  tessera::multiply(A, B, C, tessera::Options().allow_nonfinite());
  CHECK(std::isinf(c[2]));
}

TEST_CASE("multiply(a, b, c): NaN and Inf in a large matrix are counted over threads, the first named") {
  const std::int64_t m = 3001, k = 1500;  // 36 MB: scanned in row blocks on several threads
  std::vector<double> a(static_cast<std::size_t>(m * k), 0.5), b(static_cast<std::size_t>(k), 1.0), c(3001, 0.0);
  a[static_cast<std::size_t>(2900 * k + 7)] = std::numeric_limits<double>::quiet_NaN();  // in the last block
  a[static_cast<std::size_t>(1700 * k + 1499)] = -std::numeric_limits<double>::infinity();
  try {
    tessera::multiply(tessera::Matrix(a.data(), m, k), tessera::Matrix(b.data(), k, 1), tessera::Matrix(c.data(), m, 1),
                      tessera::Options());
    FAIL("accepted");
  } catch (const tessera::MultiplyError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("A holds 2 non-finite value(s) (NaN/Inf), the first at (1700, 1499)") !=
          std::string::npos);
  }
  CHECK(std::all_of(c.begin(), c.end(), [](double v) { return v == 0.0; }));
}
