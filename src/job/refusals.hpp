#pragma once
// What every algorithm refuses up front, on every rank alike: inputs holding NaN or Inf, and
// ranks that need more host memory than their node has.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "core/dtype.hpp"
#include "io/nonfinite.hpp"
#include "io/operand.hpp"

namespace tessera::job {

// Non-finite values in a rows x cols piece of a matrix whose full rows are `ld_total` long,
// placed at (row0, col0): the count, and the first position as a row-major index of the whole
// matrix (exact below 2^53). Callers pass pieces that do not overlap across ranks.
using NonfiniteScan = io::NonfiniteCount;
NonfiniteScan scan_nonfinite(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                             std::int64_t col0, std::int64_t ld_total);

// One matrix's scan, for refuse_nonfinite: `what` ("A", "B", "C_old"), how it is read (its first
// non-finite element is read again, by the operand's coordinates, to say why), its columns.
struct Scanned {
  std::string what;
  io::Operand op;
  NonfiniteScan scan;
  std::int64_t cols = 1;
};

// Sums the scans over the ranks and, unless allowed, refuses NaN/Inf in any of them (A, B, and
// C_old with --beta) with the count and the first (row, col) in the operand's coordinates; a
// value that is finite in the file but overflows float32 on conversion is named as such (the
// cause to fix is --dtype, not the data). Collective (a Comm::step): throws the same JobError on
// every rank.
void refuse_nonfinite(const comm::Comm& comm, const std::vector<Scanned>& scans, bool allowed);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Refuses, up front and on every rank (a Comm::step), a job whose ranks on some node need more
// host memory than the node has: `need` is this rank's bytes, `what` says what they hold (for
// the message, e.g. "A rows, B columns and C block of a 2x2 grid"). Collective.
void refuse_over_node_memory(const comm::Comm& comm, double need, const std::string& what,
                             const std::string& advice = "use more ranks on more nodes");

// MemTotal of this node in bytes (0 if unknown). Not MemAvailable: page cache is reclaimable,
// and some virtual machines grow their memory as it is used.
double node_memory_bytes();

}  // namespace tessera::job
