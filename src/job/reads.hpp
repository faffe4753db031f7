#pragma once
// What a rank reads besides the algorithm's say: its A and B rows as the harness hands them to the
// algorithm (whole, or piece by piece to a staged GEMM), and with --beta its slice of C_old,
// every piece's NaN/Inf counted for the refusals (job/refusals.hpp).
#include <cstdint>

#include "algorithms/algorithm.hpp"
#include "core/dtype.hpp"
#include "io/nonfinite.hpp"
#include "job/job_options.hpp"

namespace tessera::job {

// What the reads found and took: A's and B's NaN/Inf, and their seconds.
struct ReadTally {
  io::NonfiniteCount a, b;
  double seconds = 0;
};

// This rank's reads: rows [row0, row0 + rows) of its A block or B block (all their columns), as
// op(A) and op(B) in their own coordinates, whether the file holds them or their transposes
// (io/operand.hpp); each piece's NaN/Inf counted into `tally` (every element by one rank) and B's
// scaled by alpha (after the count: the refusal names the file's values). Called once for whole
// blocks, or by a staged GEMM's backend piece by piece, in row order, on the calling thread.
// `share` and `tally` must outlive them. Where A and B are both stored as one 16-bit float (the
// problem's half_inputs), neither transposed, and `kernel` is the one that rounds to that type
// (cublas-f16 / cublas-bf16, changing no value), also a_half / b_half: the same rows as stored.
algorithms::StagedReads rank_reads(const JobOptions& o, const algorithms::Share& share, const algorithms::Problem& p,
                                   ReadTally& tally, const std::string& kernel);

// With --beta: the NaN/Inf of this rank's slice of C_old's rows (`rank` of `ranks`), read once
// more up front, in pieces of about 64 MiB. Not collective.
io::NonfiniteCount scan_old_c(const JobOptions& o, int rank, int ranks, const algorithms::Problem& p);

}  // namespace tessera::job
