// The partition's index math, exhaustively for small sizes, and at sizes past 2^31 without
// allocating anything. No MPI, no GPU.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "partition/partition.hpp"

using tessera::partition::choose_grid;
using tessera::partition::GridShape;
using tessera::partition::parse_grid;
using tessera::partition::Partition;
using tessera::partition::split;
using tessera::partition::summa_panels;

TEST_CASE("split covers 0..extent with sizes differing by at most one", "[partition]") {
  for (std::int64_t extent = 1; extent <= 40; ++extent) {
    for (int parts = 1; parts <= extent; ++parts) {
      std::int64_t next = 0, smallest = extent, largest = 0;
      for (int i = 0; i < parts; ++i) {
        const auto r = split(extent, parts, i);
        REQUIRE(r.begin == next);
        REQUIRE(r.size() >= 1);
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
        next = r.end;
      }
      REQUIRE(next == extent);
      REQUIRE(largest - smallest <= 1);
    }
  }
}

TEST_CASE("every element of C is owned by exactly one active rank", "[partition]") {
  for (std::int64_t m = 1; m <= 9; ++m)
    for (std::int64_t n = 1; n <= 9; ++n)
      for (int p = 1; p <= 13; ++p) {
        const GridShape g = choose_grid(m, n, 5, p);
        REQUIRE(g.size() <= p);
        REQUIRE(g.rows <= m);
        REQUIRE(g.cols <= n);
        const Partition part(m, n, 5, p, g);
        std::vector<int> owner(static_cast<std::size_t>(m * n), -1);
        std::int64_t total = 0;
        for (int r = 0; r < p; ++r) {
          if (!part.active(r)) {
            REQUIRE(part.c_elements(r) == 0);
            continue;
          }
          REQUIRE(part.owner(part.block_row(r), part.block_col(r)) == r);
          const auto rows = part.rows_of(r), cols = part.cols_of(r);
          REQUIRE(part.a_elements(r) == rows.size() * 5);
          REQUIRE(part.b_elements(r) == 5 * cols.size());
          total += part.c_elements(r);
          for (auto i = rows.begin; i < rows.end; ++i)
            for (auto j = cols.begin; j < cols.end; ++j) {
              REQUIRE(owner[static_cast<std::size_t>(i * n + j)] == -1);
              owner[static_cast<std::size_t>(i * n + j)] = r;
            }
        }
        REQUIRE(total == m * n);
        for (int o : owner) REQUIRE(o >= 0);
      }
}

TEST_CASE("choose_grid uses all ranks when that shrinks the largest block", "[partition]") {
  CHECK(choose_grid(100, 100, 100, 1) == GridShape{1, 1});
  CHECK(choose_grid(100, 100, 100, 4) == GridShape{2, 2});
  CHECK(choose_grid(100, 100, 100, 2).size() == 2);
  CHECK(choose_grid(100, 100, 100, 3).size() == 3);  // prime: 3x1 or 1x3
  CHECK(choose_grid(100, 100, 100, 7).size() == 7);
  CHECK(choose_grid(1000, 10, 50, 4) == GridShape{4, 1});  // tall C: split rows
  CHECK(choose_grid(10, 1000, 50, 4) == GridShape{1, 4});  // wide C: split columns
  CHECK(choose_grid(1, 1, 1, 5) == GridShape{1, 1});       // more ranks than elements: idle ranks
  CHECK(choose_grid(2, 1, 7, 4) == GridShape{2, 1});
}

TEST_CASE("parse_grid accepts PRxPC and rejects everything else", "[partition]") {
  CHECK(parse_grid("2x3") == GridShape{2, 3});
  CHECK(parse_grid("1X1") == GridShape{1, 1});
  for (const char* bad : {"", "x", "2x", "x3", "0x2", "2x0", "-1x2", "2*3", "axb", "2x3x4", "9999999x1"})
    CHECK_THROWS_AS(parse_grid(bad), tessera::InputError);
}

TEST_CASE("Partition refuses grids that do not fit", "[partition]") {
  CHECK_THROWS_AS(Partition(4, 4, 4, 3, GridShape{2, 2}), tessera::InputError);  // needs 4 ranks
  CHECK_THROWS_AS(Partition(1, 4, 4, 4, GridShape{2, 1}), tessera::InputError);  // 2 block rows, M = 1
  CHECK_THROWS_AS(Partition(4, 1, 4, 4, GridShape{1, 2}), tessera::InputError);
  CHECK_THROWS_AS(Partition(0, 4, 4, 1, GridShape{1, 1}), tessera::InputError);
  CHECK_THROWS_AS(Partition(4, 4, 0, 1, GridShape{1, 1}), tessera::InputError);
  CHECK_NOTHROW(Partition(4, 4, 4, 9, GridShape{2, 2}));  // 5 idle ranks are fine
}

TEST_CASE("offsets and counts stay exact beyond 2^31 elements", "[partition]") {
  // 100000 x 90000 C with K = 70000 on 6 ranks: blocks of ~1.5e9 elements, A panels of ~2.3e9.
  const std::int64_t m = 100000, n = 90000, k = 70000;
  const Partition part(m, n, k, 6, choose_grid(m, n, k, 6));
  std::int64_t c_total = 0;
  double flops = 0;
  for (int r = 0; r < 6; ++r) {
    c_total += part.c_elements(r);
    flops += part.flops(r);
    REQUIRE(part.a_elements(r) == part.rows_of(r).size() * k);
    REQUIRE(part.a_elements(r) > (std::int64_t{1} << 31));
  }
  REQUIRE(c_total == m * n);
  REQUIRE(flops == 2.0 * m * n * k);
  const auto last = split(std::int64_t{3} << 40, 7, 6);
  REQUIRE(last.end == (std::int64_t{3} << 40));
}

TEST_CASE("ksplit: the K ranges tile 0..K, empty ranges when K < P", "[partition][ksplit]") {
  using tessera::partition::KSplit;
  for (std::int64_t k = 1; k <= 12; ++k)
    for (int p = 1; p <= 9; ++p) {
      const KSplit ks(5, 7, k, p);
      std::int64_t next = 0, a = 0, b = 0, smallest = k, largest = 0;
      double flops = 0;
      for (int r = 0; r < p; ++r) {
        const auto kr = ks.k_range(r);
        REQUIRE(kr.begin == next);
        REQUIRE((kr.size() == 0) == (r >= k));  // empty exactly past K
        smallest = std::min(smallest, kr.size());
        largest = std::max(largest, kr.size());
        next = kr.end;
        a += ks.a_elements(r);
        b += ks.b_elements(r);
        flops += ks.flops(r);
        REQUIRE(ks.c_elements() == 35);
      }
      REQUIRE(next == k);
      REQUIRE(largest - smallest <= 1);
      REQUIRE(a == 5 * k);
      REQUIRE(b == k * 7);
      REQUIRE(flops == 2.0 * 5 * 7 * static_cast<double>(k));
    }
  // Past 2^31 elements without overflow.
  const KSplit big(std::int64_t{1} << 20, std::int64_t{1} << 20, 3, 2);
  REQUIRE(big.c_elements() == (std::int64_t{1} << 40));
  REQUIRE(big.a_elements(0) == (std::int64_t{1} << 21));
  REQUIRE(big.k_range(1).size() == 1);
  REQUIRE_THROWS_AS(KSplit(0, 1, 1, 1), tessera::InputError);
  REQUIRE_THROWS_AS(KSplit(1, 1, 1, 0), tessera::InputError);
}

TEST_CASE("sizes past what 64-bit byte counts can hold are refused, not wrapped", "[partition]") {
  const std::int64_t huge = std::int64_t{1} << 40;  // a 2^40 x 2^40 dataset costs 3 KB as an HDF5 file
  CHECK_THROWS_AS(Partition(huge, huge, 1, 1, GridShape{1, 1}), tessera::InputError);
  CHECK_THROWS_AS(Partition(4, 4, 4, 1000000, GridShape{999999, 999999}), tessera::InputError);
  const GridShape g = choose_grid(huge, huge, huge, 7);  // the cost model must not overflow either
  CHECK(g.size() <= 7);
  CHECK(g.size() >= 1);
}

TEST_CASE("summa: panels tile 0..K, each inside one owner's A columns and B rows", "[partition][summa]") {
  for (std::int64_t k = 1; k <= 40; ++k)
    for (int pr = 1; pr <= 5; ++pr)
      for (int pc = 1; pc <= 5; ++pc)
        for (std::int64_t width : {1, 3, 7, 64}) {
          const auto panels = summa_panels(k, GridShape{pr, pc}, width);
          std::int64_t at = 0;
          for (const auto& p : panels) {
            REQUIRE(p.begin == at);
            REQUIRE(p.width >= 1);
            REQUIRE(p.width <= width);
            const tessera::partition::Range a = tessera::partition::summa_k_cols(k, pc, p.owner_col),
                                            b = tessera::partition::summa_k_rows(k, pr, p.owner_row);
            REQUIRE(a.begin <= p.begin);
            REQUIRE(p.begin + p.width <= a.end);  // the owner column holds all of the panel's A columns
            REQUIRE(b.begin <= p.begin);
            REQUIRE(p.begin + p.width <= b.end);  // the owner row holds all of its B rows
            at += p.width;
          }
          REQUIRE(at == k);
          // No more panels than the width forces plus one per owner boundary.
          REQUIRE(static_cast<std::int64_t>(panels.size()) <= (k + width - 1) / width + pr + pc);
        }
  REQUIRE_THROWS_AS(summa_panels(0, GridShape{1, 1}, 1), tessera::InputError);
  REQUIRE_THROWS_AS(summa_panels(5, GridShape{1, 1}, 0), tessera::InputError);
  // Past 2^31: one panel of the whole K on a 1x1 grid.
  const std::int64_t big = std::int64_t{3} << 31;
  const auto one = summa_panels(big, GridShape{1, 1}, big);
  REQUIRE(one.size() == 1);
  REQUIRE(one[0].width == big);
}

TEST_CASE("scatter bands give every rank equal pieces and cover C's rows once", "[partition]") {
  for (std::int64_t m : {1, 2, 7, 13, 64, 1000})
    for (int ranks : {1, 2, 3, 4})
      for (int count : {1, 2, 3, 8}) {
        const tessera::partition::ScatterBands b(m, ranks, count);
        CHECK(b.rows() == b.piece() * ranks);
        CHECK(b.count() * b.rows() >= m);                                              // the bands reach C's last row
        CHECK((b.count() * b.rows() - m) < static_cast<std::int64_t>(count) * ranks);  // padding: under a row a piece
        std::vector<int> seen(static_cast<std::size_t>(m), 0);
        for (int t = 0; t < count; ++t)
          for (int r = 0; r < ranks; ++r) {
            const auto rows = b.mine(t, r);
            CHECK(rows.size() <= b.piece());
            if (rows.size() > 0) CHECK((rows.begin >= b.band(t).begin && rows.end <= b.band(t).end));
            for (auto i = rows.begin; i < rows.end; ++i) ++seen[static_cast<std::size_t>(i)];
          }
        for (int s : seen) CHECK(s == 1);
      }
  CHECK_THROWS_AS(tessera::partition::ScatterBands(0, 2, 1), tessera::InputError);
}

TEST_CASE("intersect keeps the common part of two rectangles, empty where they do not meet", "[partition]") {
  using tessera::partition::Range;
  using tessera::partition::Rect;
  const Rect x{{2, 10}, {0, 5}}, y{{7, 20}, {3, 9}};
  const Rect both = tessera::partition::intersect(x, y);
  CHECK(both.rows == Range{7, 10});
  CHECK(both.cols == Range{3, 5});
  CHECK(both.elements() == 6);
  const Rect apart = tessera::partition::intersect(Rect{{0, 3}, {0, 3}}, Rect{{5, 8}, {1, 2}});
  CHECK(apart.elements() == 0);
  CHECK(apart.rows.size() == 0);  // at the later begin, not negative
  CHECK(tessera::partition::intersect(Range{4, 4}, Range{0, 9}).size() == 0);
}
