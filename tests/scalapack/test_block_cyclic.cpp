// The block-cyclic index math of libtessera_scalapack against a brute-force walk of every index.
#include <catch2/catch_test_macros.hpp>

#include "block_cyclic.hpp"

using tessera::scalapack::Axis;
using tessera::scalapack::held_span;
using tessera::scalapack::Run;
using tessera::scalapack::runs;

namespace {

// Walks indices 0 .. g-1 one by one: the owner of each and how many each process holds before.
std::int64_t held_before_walk(const Axis& a, int p, std::int64_t g) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < g; ++i)
    if ((a.src + i / a.block) % a.procs == p) ++n;
  return n;
}

}  // namespace

TEST_CASE("held_before matches a walk of every index (INDXG2L, NUMROC)", "[scalapack]") {
  for (std::int64_t block : {1, 2, 3, 7, 64})
    for (int procs : {1, 2, 3, 5})
      for (int src = 0; src < procs; ++src) {
        const Axis a{block, src, procs};
        for (int p = 0; p < procs; ++p)
          for (std::int64_t g : {0, 1, 2, 5, 13, 64, 65, 130, 201})
            REQUIRE(a.held_before(p, g) == held_before_walk(a, p, g));
      }
}

TEST_CASE("runs cover a sub-matrix dimension once, each with one holder and one target", "[scalapack]") {
  for (std::int64_t hb : {1, 3, 7, 64})
    for (std::int64_t cb : {1, 2, 7, 64})
      for (int procs : {1, 2, 3})
        for (std::int64_t offset : {0, 2, 8})
          for (std::int64_t c_offset : {0, 1, 64})
            for (std::int64_t extent : {0, 1, 13, 70, 131}) {
              const Axis held{hb, procs - 1, procs}, c_axis{cb, 0, procs};
              const auto rs = runs(extent, offset, held, c_offset, c_axis);
              std::int64_t x = 0;
              for (const Run& r : rs) {
                REQUIRE(r.x0 == x);
                REQUIRE(r.len > 0);
                for (std::int64_t i = r.x0; i < r.x0 + r.len; ++i) {
                  REQUIRE(held.owner(offset + i) == r.src);
                  REQUIRE(held.held_before(r.src, offset + i) == r.src_local + (i - r.x0));
                  REQUIRE(c_axis.owner(c_offset + i) == r.target);
                  // its place among the target's indices of C's sub-matrix
                  std::int64_t pos = 0;
                  for (std::int64_t j = 0; j < i; ++j)
                    if (c_axis.owner(c_offset + j) == r.target) ++pos;
                  REQUIRE(r.target_pos + (i - r.x0) == pos);
                }
                x += r.len;
              }
              REQUIRE(x == extent);
              // held_span: every process's part of C's sub-matrix, together the whole of it
              std::int64_t total = 0;
              for (int p = 0; p < procs; ++p) {
                const auto s = held_span(extent, c_offset, c_axis, p);
                REQUIRE(s.local0 == held_before_walk(c_axis, p, c_offset));
                total += s.count;
              }
              REQUIRE(total == extent);
              // without a target every run is needed everywhere, at its own position
              for (const Run& r : runs(extent, offset, held)) {
                REQUIRE(r.target == -1);
                REQUIRE(r.target_pos == r.x0);
              }
            }
}
