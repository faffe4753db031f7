#pragma once
// `tessera verify`: compare a result C against A*B computed independently, in float64 with
// OpenBLAS, distributed over the same ranks (each rank checks one block of C).
//
// The check is elementwise against the rounding-error bound of a length-K dot product:
//   |C - AB|_ij <= safety * gamma_K(dtype of C) * (|A||B|)_ij,   gamma_K = K u / (1 - K u),
// which holds for any summation order, so it can neither pass a wrong element nor fail a
// correct one whatever the data's signs. The relative Frobenius error is reported too.
#include <string>

#include "dist/comm.hpp"

namespace tessera::run {

struct VerifyOptions {
  std::string a, b, c;
  double safety = 2.0;      // multiple of gamma_K allowed
  double tolerance = 0;     // > 0: also require rel. Frobenius error <= tolerance
  std::string dtype;        // the precision C was computed in: "" = C's stored type
};

struct VerifyResult {
  bool passed = false;
  double rel_frobenius = 0;     // ||C - AB||_F / ||AB||_F
  double max_normalized = 0;    // max_ij |C - AB|_ij / (|A||B|)_ij
  double bound = 0;             // safety * gamma_K
  long long nonfinite = 0;      // NaN / Inf elements in C
  std::string summary;          // one line for people
};

// Collective; throws dist::JobError on bad input.
VerifyResult verify(const VerifyOptions& opts, const dist::Comm& comm);

}  // namespace tessera::run
