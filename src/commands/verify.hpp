#pragma once
// `tessera verify`: check a result C against A and B, distributed over the same ranks.
//
// Default: Freivalds' check (job/freivalds.hpp), O(n^2) work: any wrong element is caught.
// --full: recompute A*B in float64 with OpenBLAS (O(n^3), for small sizes) and check every
// element against the rounding-error bound of a length-K dot product,
//   |C - AB|_ij <= safety * gamma_K(dtype of C) * (|A||B|)_ij,   gamma_K = K u / (1 - K u),
// which holds for any summation order. The relative Frobenius error is reported too.
#include <cstdint>
#include <string>

#include "comm/comm.hpp"

namespace tessera::commands {

struct VerifyOptions {
  std::string a, b, c;
  bool full = false;     // the O(n^3) elementwise comparison instead of Freivalds
  int vectors = 3;       // Freivalds: random vectors
  double safety = 0;     // multiple of the bound allowed; 0 = the method's default
  double tolerance = 0;  // --full: also require rel. Frobenius error <= tolerance
  std::string dtype;     // the precision C was computed in: "" = C's stored type
  std::uint64_t seed = 12345;
  std::string config;  // --config file, if any
  // C of `run --transpose-a/--transpose-b/--alpha`: A and B used as run used them (io/operand.hpp),
  // alpha scaling the product. (--beta cannot be checked: run replaced the C it added.)
  bool transpose_a = false, transpose_b = false;
  double alpha = 1;
};

struct VerifyResult {
  bool passed = false;
  std::string summary;  // one line for people
};

// Collective; throws comm::JobError on bad input.
VerifyResult verify(const VerifyOptions& opts, const comm::Comm& comm);

}  // namespace tessera::commands
