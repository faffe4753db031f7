#pragma once
// One product of matrices distributed over the ranks of a communicator, each rank holding one
// block of each in its own memory (libtessera's distributed buffers, issue 42 item 3): the ranks
// exchange the rows of A and the columns of B each needs for its block of C (point to point,
// only the pieces another rank needs), and each multiplies its block through the one-process
// product of job/memory_product.hpp, C written where the caller holds it (host or GPU memory).
// Nothing is read from or written to a file.
#include <cstdint>

#include "comm/comm.hpp"
#include "job/job_options.hpp"
#include "job/memory_product.hpp"
#include "report/report.hpp"

namespace tessera::job {

// How a matrix (`rows` x `cols` as stored) is cut over the ranks: a grid_rows x grid_cols grid of
// blocks, block (i, j) on rank i * grid_cols + j, its rows partition::split(rows, grid_rows, i) and
// its columns partition::split(cols, grid_cols, j) (tessera's own split: sizes differ by one at
// most, the first ones longer). Ranks beyond the grid hold no block (0 x 0).
struct BlockGrid {
  std::int64_t rows = 0, cols = 0;
  int grid_rows = 1, grid_cols = 1;
};

// A rank's part of a distributed matrix: the grid (the same on every rank) and its own block.
struct DistributedMatrix {
  BlockGrid grid;
  MemoryMatrix local;
};

// C = alpha op(A) op(B) + beta C over the ranks of `comm` (collective), op and every choice from
// `o` as in multiply_in_memory. A, B and C may each have a grid of their own. Every refusal (a
// grid, a shape, a block that is not the rank's, a dtype, NaN/Inf) is agreed on by all ranks: each
// throws the same comm::JobError, and no rank's C is written. The report's ranks are every
// rank's record, the same report on every rank.
report::JobReport multiply_distributed(const JobOptions& o, const DistributedMatrix& a, const DistributedMatrix& b,
                                       const DistributedMatrix& c, const comm::Comm& comm);

}  // namespace tessera::job
