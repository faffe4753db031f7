#pragma once
// Freivalds' check of C = A*B in O(n^2) work, distributed over the partition's ranks.
//
// For each of `vectors` random sign vectors x (entries +-1), compare A(Bx) with Cx in float64.
// Each rank (i, j) holds the A rows of block-row i, the B columns of block-column j and the C
// block (i, j): it forms B_j x_j and C_ij x_j, sums over the ranks of its block-row, and the
// rank with j = 0 compares r = A_i(Bx) - (Cx)_i row by row with
//
//   |r_p| <= safety * gamma_K(dtype) * (|A|(|B||x|))_p / sqrt(N)  +  float64 rounding terms,
//
// where gamma_K = K u / (1 - K u). Why /sqrt(N): each element of C carries a rounding error of
// at most gamma_K (|A||B|)_pq, and r_p sums N of them with independent random signs, so it grows
// like sqrt(N) times one error, not N times (the worst-case bound would let a wrong element of
// size sqrt(N) times the rounding error through). A wrong element of C shows up in r_p with
// its full size, since |x_q| = 1. NaN or Inf anywhere in C fails the check.
#include <cstdint>
#include <string>

#include "comm/comm.hpp"
#include "core/dtype.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

struct FreivaldsResult {
  bool passed = false;
  int vectors = 0;
  double max_ratio = 0;     // max over rows and vectors of |r_p| / bound_p (passed: <= 1)
  double max_relative = 0;  // max over vectors of ||r|| / ||A(Bx)||
  long long nonfinite = 0;  // non-finite elements of C
  std::string summary;
};

// Collective over `comm`. a: rows_i x K, b: K x cols_j, c: rows_i x cols_j (row-major, elements
// of type `storage`); ignored on idle ranks. `precision` is what C was computed in (the bound).
FreivaldsResult freivalds(const comm::Comm& comm, const partition::Partition& part, DType storage, DType precision,
                          const void* a, const void* b, const void* c, int vectors, double safety, std::uint64_t seed);

inline constexpr double kFreivaldsSafety = 8.0;
inline constexpr int kFreivaldsVectors = 3;

}  // namespace tessera::job
