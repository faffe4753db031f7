// Staged GEMMs (backend.hpp's StagedProblem): the size of a piece, and the default way of
// running one, for a backend without buffers of its own to stage through (the CPU): A and B read
// whole into plain memory piece by piece, one gemm(), C handed back piece by piece.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "backend/backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace tessera::backend {

std::size_t stage_piece_bytes() {
  constexpr std::size_t kDefault = std::size_t{32} << 20;
  return static_cast<std::size_t>(env::whole("TESSERA_STAGE_BYTES").value_or(kDefault));
}

std::int64_t stage_piece_rows(std::size_t row_bytes) {
  return row_bytes == 0 ? std::int64_t{1} << 40
                        : std::max<std::int64_t>(1, static_cast<std::int64_t>(stage_piece_bytes() / row_bytes));
}

std::vector<PhaseTime> Backend::gemm_staged(const std::string& kernel, const StagedProblem& p) {
  const std::size_t es = dtype_size(p.dtype);
  const auto rows_of = [&](const auto& fill, std::int64_t rows, std::int64_t cols, unsigned char* into) {
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * es;
    const std::int64_t step = stage_piece_rows(row_bytes);
    for (std::int64_t r = 0; r < rows; r += step)
      fill(r, std::min(step, rows - r), into + static_cast<std::size_t>(r) * row_bytes);
  };
  HostBuffer a = allocate_pageable(static_cast<std::size_t>(p.m * p.k) * es);
  HostBuffer b = allocate_pageable(static_cast<std::size_t>(p.k * p.n) * es);
  HostBuffer c = allocate_pageable(static_cast<std::size_t>(p.m * p.n) * es);
  rows_of(p.fill_b, p.k, p.n, b.data());
  rows_of(p.fill_a, p.m, p.k, a.data());
  // Computed as a streamed GEMM is (every row already there): the same row tiles, so the same
  // results bit for bit as the unstaged run.
  RowProgress all_of_a;
  all_of_a.publish(p.m);
  auto phases = gemm(kernel, {p.dtype, p.m, p.n, p.k, a.data(), b.data(), c.data(), &all_of_a, nullptr});
  rows_of([&](std::int64_t r0, std::int64_t rows, unsigned char* at) { p.take_c(r0, rows, at); }, p.m, p.n, c.data());
  return phases;
}

}  // namespace tessera::backend
