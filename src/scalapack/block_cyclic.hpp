#pragma once
// The index math of ScaLAPACK's 2-D block-cyclic layout, and the plan that moves the parts of a
// stored operand each process needs for its block of C (libtessera_scalapack, issue 44). Pure:
// no MPI, no BLACS; tests/scalapack/test_block_cyclic.cpp checks it against a brute-force walk.
//
// Everything is 0-based here (ScaLAPACK's ia, ja are 1-based: callers subtract one).
#include <cstdint>
#include <vector>

namespace tessera::scalapack {

// One dimension of a block-cyclic distribution: blocks of `block` indices dealt to `procs`
// processes, block 0 to process `src`.
struct Axis {
  std::int64_t block = 1;
  int src = 0;
  int procs = 1;

  int owner(std::int64_t g) const { return static_cast<int>((src + g / block) % procs); }
  // How many of the global indices [0, g) process p holds: the local index of g on its owner
  // (ScaLAPACK's INDXG2L), and, at g = the extent, p's local count (NUMROC).
  std::int64_t held_before(int p, std::int64_t g) const;
};

// A run of consecutive indices x in [x0, x0 + len) of a sub-matrix's dimension (global index
// offset + x) that one process holds (`src`, from `src_local` on in its local storage) and one
// target needs (`target`, -1: every target, at position `target_pos` of its packed panel).
struct Run {
  std::int64_t x0 = 0;
  std::int64_t len = 0;
  int src = 0;
  std::int64_t src_local = 0;
  int target = -1;
  std::int64_t target_pos = 0;
};

// The runs of a sub-matrix dimension of `extent` indices starting at global `offset` of `held`
// (how the operand is stored). With `need` (C's axis along this dimension, and C's offset) each
// run is also cut where C's owner changes: `target` is the process of C's axis that holds the
// run's indices of C and `target_pos` their position among that process's indices of C's
// sub-matrix. Without it, every target needs the whole dimension (target -1, target_pos = x0).
std::vector<Run> runs(std::int64_t extent, std::int64_t offset, const Axis& held);
std::vector<Run> runs(std::int64_t extent, std::int64_t offset, const Axis& held, std::int64_t c_offset,
                      const Axis& c_axis);

// How many indices of C's sub-matrix dimension [c_offset, c_offset + extent) process p holds,
// and the local index of the first of them.
struct Span {
  std::int64_t local0 = 0;
  std::int64_t count = 0;
};
Span held_span(std::int64_t extent, std::int64_t c_offset, const Axis& c_axis, int p);

}  // namespace tessera::scalapack
