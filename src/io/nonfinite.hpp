#pragma once
// Counting NaN and Inf in a block of a row-major matrix, at memory speed: the run refuses
// non-finite inputs with it, and the writer of C counts what it writes (C from finite inputs can
// still overflow). Plain loops, no MPI, no HDF5.
#include <cstdint>

#include "core/dtype.hpp"

namespace tessera::io {

// Non-finite elements seen so far and the first of them as a row-major index of the whole
// matrix (exact below 2^53; +infinity while none was seen). Blocks may arrive in any order.
struct NonfiniteCount {
  double count = 0;
  double first = 1.0 / 0.0;

  // Adds a rows x cols block (row-major, `dtype`) that sits at (row0, col0) of a matrix whose
  // rows are `ld_total` long.
  void add(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0, std::int64_t col0,
           std::int64_t ld_total);
  // The same for 16-bit floats (float16, or bfloat16 where `bfloat16`) as stored.
  void add_half(const void* data, bool bfloat16, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                std::int64_t col0, std::int64_t ld_total);
  void merge(const NonfiniteCount& other);
};

// The same for one block on its own.
NonfiniteCount count_nonfinite(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                               std::int64_t col0, std::int64_t ld_total);

}  // namespace tessera::io
