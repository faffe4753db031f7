// libtessera's products of distributed matrices (tessera::DistributedMatrix, multiply(a, b, c,
// options, comm)) through the installed header, under mpirun on 1-4 ranks: each rank holds its
// blocks of matrices every rank generates alike, A, B and C on grids of their own (more ranks
// than blocks, prime and odd sizes, K = 1, op, alpha, beta, padded rows); each checks its block of
// C against a float64 product, and the refusals are agreed on by every rank with C unchanged.
#include <mpi.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/tessera.hpp"

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

struct Grid {
  int rows, cols;
};

// A global matrix every rank generates alike (seeded), and this rank's block of it, rows padded.
template <class T>
struct Global {
  std::int64_t rows, cols;
  Grid grid;
  std::vector<T> all;  // rows x cols, packed
  std::int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0, ld = 0;
  std::vector<T> block;  // (r1 - r0) x ld
  Global(std::int64_t r, std::int64_t c, Grid g, std::uint64_t seed, std::int64_t pad) : rows(r), cols(c), grid(g) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    all.resize(static_cast<std::size_t>(rows * cols));
    for (auto& v : all) {
      if constexpr (std::is_floating_point_v<T>) {
        v = static_cast<T>(u(rng));
      } else {  // std::complex: both parts random
        const double re = u(rng);
        v = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(u(rng)));
      }
    }
    const int me = world_rank();
    if (me < g.rows * g.cols) {
      std::tie(r0, r1) = tessera::block_span(rows, g.rows, me / g.cols);
      std::tie(c0, c1) = tessera::block_span(cols, g.cols, me % g.cols);
    }
    ld = (c1 - c0) + pad;
    block.assign(static_cast<std::size_t>(std::max<std::int64_t>((r1 - r0) * ld, 1)), static_cast<T>(7));
    for (std::int64_t i = r0; i < r1; ++i)
      for (std::int64_t j = c0; j < c1; ++j)
        block[static_cast<std::size_t>((i - r0) * ld + (j - c0))] = all[static_cast<std::size_t>(i * cols + j)];
  }
  T at(std::int64_t i, std::int64_t j) const { return all[static_cast<std::size_t>(i * cols + j)]; }
  tessera::DistributedMatrix readonly() const {
    return {rows, cols, grid.rows, grid.cols,
            tessera::Matrix(static_cast<const T*>(block.data()), r1 - r0, c1 - c0, ld)};
  }
  tessera::DistributedMatrix writable() {
    return {rows, cols, grid.rows, grid.cols, tessera::Matrix(block.data(), r1 - r0, c1 - c0, ld)};
  }
};

struct Case {
  std::int64_t m, n, k;
  bool ta, tb;
  double alpha, beta;
  Grid ga, gb, gc;
  std::int64_t pad;
};

// Grids that fit `np` ranks: 1x1, 1xP, Px1, and 2x2 / 2x1 / 1x3 where they fit.
std::vector<Case> cases(int np) {
  const Grid one{1, 1}, row{1, np}, col{np, 1},
      sq = np >= 4   ? Grid{2, 2}
           : np >= 2 ? Grid{2, 1}
                     : one,
      three = np >= 3 ? Grid{1, 3} : one;
  return {{1, 1, 1, false, false, 1, 0, one, one, one, 0},         {37, 29, 53, false, false, 1, 0, col, row, sq, 0},
          {31, 17, 1, false, false, 1, 0, row, col, col, 2},       {23, 41, 19, true, false, 1, 0, sq, three, row, 0},
          {23, 41, 19, false, true, 1, 0, three, sq, col, 3},      {64, 48, 96, true, true, -0.5, 2, col, col, sq, 1},
          {53, 7, 101, false, false, 1.5, 0.5, sq, row, three, 5}, {2, 3, 5, false, false, 1, -1, col, col, sq, 0},
          {97, 89, 83, true, true, 1, 1, row, row, row, 1}};
}

template <class T>
void check_case(const Case& c) {
  INFO(c.m << "x" << c.n << "x" << c.k << " ta " << c.ta << " tb " << c.tb << " alpha " << c.alpha << " beta " << c.beta
           << " grids A " << c.ga.rows << "x" << c.ga.cols << " B " << c.gb.rows << "x" << c.gb.cols << " C "
           << c.gc.rows << "x" << c.gc.cols << " pad " << c.pad << " " << sizeof(T) * 8 << "-bit, rank " << world_rank()
           << " of " << world_size());
  const Global<T> a(c.ta ? c.k : c.m, c.ta ? c.m : c.k, c.ga, 11 + static_cast<std::uint64_t>(c.m), c.pad);
  const Global<T> b(c.tb ? c.n : c.k, c.tb ? c.k : c.n, c.gb, 13 + static_cast<std::uint64_t>(c.n), c.pad);
  Global<T> cm(c.m, c.n, c.gc, 17 + static_cast<std::uint64_t>(c.k), c.pad);
  const std::vector<T> before = cm.block;
  tessera::Options o;
  o.transpose_a(c.ta).transpose_b(c.tb).alpha(c.alpha).beta(c.beta).backend("cpu");
  const tessera::Result r = tessera::multiply(a.readonly(), b.readonly(), cm.writable(), o, MPI_COMM_WORLD);
  CHECK(r.ranks() == world_size());
  CHECK(r.m() == c.m);
  CHECK(r.n() == c.n);
  CHECK(r.k() == c.k);
  CHECK(r.phase_seconds(world_rank(), "exchange") >= 0);
  const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const double gamma = 2 * (static_cast<double>(c.k) + 2) * u / (1 - (static_cast<double>(c.k) + 2) * u);
  std::int64_t bad = 0;
  for (std::int64_t i = cm.r0; i < cm.r1; ++i) {
    for (std::int64_t j = cm.c0; j < cm.c1; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double x = c.ta ? a.at(p, i) : a.at(i, p), y = c.tb ? b.at(j, p) : b.at(p, j);
        exact += x * y;
        magnitude += std::fabs(x * y);
      }
      const double old = cm.at(i, j), want = c.alpha * exact + c.beta * old;
      const double bound = gamma * (std::fabs(c.alpha) * magnitude + std::fabs(c.beta * old)) + u * std::fabs(want);
      if (!(std::fabs(cm.block[static_cast<std::size_t>((i - cm.r0) * cm.ld + (j - cm.c0))] - want) <= bound)) ++bad;
    }
    for (std::int64_t j = cm.c1 - cm.c0; j < cm.ld; ++j)  // the padding untouched
      if (cm.block[static_cast<std::size_t>((i - cm.r0) * cm.ld + j)] !=
          before[static_cast<std::size_t>((i - cm.r0) * cm.ld + j)])
        ++bad;
  }
  CHECK(bad == 0);
}

// A complex128 product with op 'N', 'T' or 'C' per operand and complex alpha, beta, against the
// product computed here (each part within 2 gamma_{2k+2} of it).
void check_complex_case(const Case& c, char op_a, char op_b) {
  using C = std::complex<double>;
  INFO(c.m << "x" << c.n << "x" << c.k << " op " << op_a << op_b << " rank " << world_rank() << " of " << world_size());
  const bool ta = op_a != 'N', tb = op_b != 'N';
  const Global<C> a(ta ? c.k : c.m, ta ? c.m : c.k, c.ga, 11 + static_cast<std::uint64_t>(c.m), c.pad);
  const Global<C> b(tb ? c.n : c.k, tb ? c.k : c.n, c.gb, 13 + static_cast<std::uint64_t>(c.n), c.pad);
  Global<C> cm(c.m, c.n, c.gc, 17 + static_cast<std::uint64_t>(c.k), c.pad);
  const C alpha(0.5, -1.25), beta(-1, 2);
  tessera::Options o;
  o.transpose_a(op_a == 'T').transpose_b(op_b == 'T').conjugate_a(op_a == 'C').conjugate_b(op_b == 'C');
  o.alpha(alpha).beta(beta).backend("cpu");
  const tessera::Result r = tessera::multiply(a.readonly(), b.readonly(), cm.writable(), o, MPI_COMM_WORLD);
  CHECK(r.dtype() == "complex128");
  const double u = std::ldexp(1.0, -53), k2 = 2 * static_cast<double>(c.k) + 2;
  const double gamma = 2 * k2 * u / (1 - k2 * u);
  const auto op = [](char which, C v) { return which == 'C' ? std::conj(v) : v; };
  std::int64_t bad = 0;
  for (std::int64_t i = cm.r0; i < cm.r1; ++i) {
    for (std::int64_t j = cm.c0; j < cm.c1; ++j) {
      C exact = 0;
      double magnitude = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const C x = op(op_a, ta ? a.at(p, i) : a.at(i, p)), y = op(op_b, tb ? b.at(j, p) : b.at(p, j));
        exact += x * y;
        magnitude += std::abs(x) * std::abs(y);
      }
      const C want = alpha * exact + beta * cm.at(i, j);
      const double bound =
          gamma * (std::abs(alpha) * magnitude + std::abs(beta * cm.at(i, j))) + 2 * u * std::abs(want);
      const C got = cm.block[static_cast<std::size_t>((i - cm.r0) * cm.ld + (j - cm.c0))];
      if (!(std::fabs(got.real() - want.real()) <= bound && std::fabs(got.imag() - want.imag()) <= bound)) ++bad;
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("multiply(distributed a, b, c, comm): complex128 with the conjugate transpose, on every grid") {
  const std::vector<Case> all = cases(world_size());
  for (const char op_a : {'N', 'T', 'C'})
    for (const char op_b : {'N', 'T', 'C'})
      check_complex_case(all[static_cast<std::size_t>(1 + (op_a + op_b) % 8)], op_a, op_b);
  // The same descriptors on every rank: a rank that conjugates where the others transpose is refused.
  const int me = world_rank();
  const Grid col{world_size(), 1};
  const Global<std::complex<double>> a(6, 5, col, 1, 0), b(5, 4, col, 2, 0);
  Global<std::complex<double>> cm(5, 4, col, 3, 0);
  // A complex alpha on a planned real product is refused by every rank (complex.refusals.np2 checks it
  // for real datasets through the CLI).
  tessera::Options files;
  files.shape(6, 4, 5).alpha(std::complex<double>(1, 2));
  CHECK_THROWS_WITH(tessera::dry_run(files, MPI_COMM_WORLD), Catch::Matchers::ContainsSubstring("imaginary part"));
  if (world_size() > 1) {
    const std::vector<std::complex<double>> before = cm.block;
    tessera::Options o;
    o.backend("cpu").transpose_a(me != 1).conjugate_a(me == 1);
    CHECK_THROWS(tessera::multiply(a.readonly(), b.readonly(), cm.writable(), o, MPI_COMM_WORLD));
    CHECK(cm.block == before);
  }
}

TEST_CASE("multiply(distributed a, b, c, comm): every grid, shape, op, alpha and beta against float64") {
  for (const Case& c : cases(world_size())) {
    check_case<double>(c);
    check_case<float>(c);
  }
}

TEST_CASE("multiply(distributed a, b, c, comm): a refusal is every rank's, and no C is written") {
  const int np = world_size(), me = world_rank();
  const Grid col{np, 1};
  const auto refused = [&](const tessera::DistributedMatrix& a, const tessera::DistributedMatrix& b, Global<double>& c,
                           const std::string& words) {
    INFO("expected a refusal saying: " << words);
    const std::vector<double> before = c.block;
    try {
      tessera::multiply(a, b, c.writable(), tessera::Options().backend("cpu"), MPI_COMM_WORLD);
      FAIL("accepted");
    } catch (const tessera::MultiplyError& e) {
      INFO("said: " << e.what());
      CHECK(e.agreed());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(c.block == before);
  };
  Global<double> a(10, 6, col, 1, 0), b(6, 9, col, 2, 0), c(10, 9, col, 3, 0);
  refused(a.readonly(), tessera::DistributedMatrix(7, 9, np, 1, b.readonly().local()), c, "inner dimensions disagree");
  // The last rank gives a block of the wrong shape.
  const tessera::Matrix wrong(a.block.data(), me == np - 1 ? a.r1 - a.r0 + 1 : a.r1 - a.r0, a.c1 - a.c0, a.ld);
  refused(tessera::DistributedMatrix(10, 6, np, 1, wrong), b.readonly(), c,
          "but A (10x6 over a " + std::to_string(np) + "x1 grid) gives it");
  refused(tessera::DistributedMatrix(10, 6, np + 1, 1, a.readonly().local()), b.readonly(), c,
          "needs " + std::to_string(np + 1) + " ranks");
  if (np > 1)  // rank 1 describes another grid
    refused(tessera::DistributedMatrix(10, 6, me == 1 ? 1 : np, 1, a.readonly().local()), b.readonly(), c,
            "rank 1 describes the product as");
  // NaN in the last rank's block of B: refused on every rank, naming where.
  Global<double> nan_b(6, 9, col, 2, 0);
  if (me == np - 1 && !nan_b.block.empty()) nan_b.block[0] = std::numeric_limits<double>::quiet_NaN();
  refused(a.readonly(), nan_b.readonly(), c, "B holds");
  // Inf in the last rank's rows of A: only that rank multiplies them, yet no rank writes its C.
  Global<double> inf_a(10, 6, col, 1, 0);
  if (me == np - 1 && !inf_a.block.empty()) inf_a.block[1] = std::numeric_limits<double>::infinity();
  refused(inf_a.readonly(), b.readonly(), c,
          "A holds 1 non-finite value(s) (NaN/Inf) in what rank " + std::to_string(np - 1) + " multiplies");
}
