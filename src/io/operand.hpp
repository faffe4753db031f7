#pragma once
// An input matrix as the job uses it: a stored dataset, or the transpose of one (--transpose-a,
// --transpose-b: A stored K x M and used as M x K). The file is never copied: a block of the
// transpose is read as the stored block it comes from and transposed in memory. Every reader of
// A and B (the job's read, the streamed rows of A, the refusal naming a NaN, `verify`) goes
// through read_operand_block, so coordinates are the operand's (logical) ones everywhere.
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::io {

struct Operand {
  DatasetRef ref;
  bool transposed = false;
  bool conjugated = false;  // with transposed: op(X) = X^H, a complex X's parts negated as read
};

// The operand's shape: the stored one, swapped when transposed. Throws as inspect() does.
DatasetInfo inspect_operand(const Operand& op);

// Rows [row0, row0+nrows) x cols [col0, col0+ncols) of the operand into `out` (row-major,
// nrows x ncols, as `as`). Transposed: stored rows [col0, col0+ncols) x cols [row0, row0+nrows)
// are read into a scratch buffer, in pieces of about 64 MiB, each transposed into its columns of
// `out` (a large block does not need twice its memory). Conjugated (a complex `as`): every element's
// imaginary part negated.
void read_operand_block(const Operand& op, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                        DType as, void* out);

// out (cols x rows) = in (rows x cols)^T, both row-major with elements of `esize` bytes (4, 8 or 16);
// out's rows are `ld_out` elements apart (0: `rows`, out contiguous), so the transpose can fill
// columns of a wider matrix. Cache-blocked; split over threads in row stripes of `out` when
// large. in and out must not overlap.
void transpose(const void* in, std::int64_t rows, std::int64_t cols, std::size_t esize, void* out,
               std::int64_t ld_out = 0);

}  // namespace tessera::io
