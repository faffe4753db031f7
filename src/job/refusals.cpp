#include "job/refusals.hpp"

#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::job {

NonfiniteScan scan_nonfinite(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                             std::int64_t col0, std::int64_t ld_total) {
  return io::count_nonfinite(data, dtype, rows, cols, row0, col0, ld_total);
}

namespace {

// Why element `index` of `name` (a matrix with `cols` columns) is not finite in the compute
// precision: a float64 (or integer) value beyond float32's range overflows on conversion, which
// is not the same as the file holding NaN or Inf. Reads that one element as float64.
std::string nonfinite_cause(const io::Operand& op, std::int64_t index, std::int64_t cols) {
  double stored = 0;
  try {
    io::read_operand_block(op, index / cols, 1, index % cols, 1, DType::f64, &stored);
  } catch (const std::exception&) {
    return "";  // the refusal below says enough
  }
  if (!std::isfinite(stored)) return "";
  return fmt::format(
      ": it is {:g} in the file, which overflows float32 on conversion (|x| > {:g}); compute in "
      "float64 (--dtype f64 or auto)",
      stored, static_cast<double>(std::numeric_limits<float>::max()));
}

}  // namespace

void refuse_nonfinite(const comm::Comm& comm, const std::vector<Scanned>& scans, bool allowed) {
  std::vector<double> counts, firsts;
  for (const auto& s : scans) {
    counts.push_back(comm.sum(s.scan.count));
    firsts.push_back(comm.min(s.scan.first));
  }
  comm.step([&] {
    if (comm.rank() != 0 || allowed) return;
    for (std::size_t i = 0; i < scans.size(); ++i) {
      if (!(counts[i] > 0)) continue;
      const Scanned& s = scans[i];
      const std::string name = s.op.ref.str() + (s.op.transposed ? "' (transposed)" : "'");
      const auto idx = static_cast<std::int64_t>(firsts[i]);
      const std::string where = "(" + std::to_string(idx / s.cols) + ", " + std::to_string(idx % s.cols) + ")";
      const auto count = std::to_string(static_cast<long long>(counts[i]));
      if (const std::string overflow = nonfinite_cause(s.op, idx, s.cols); !overflow.empty())
        throw InputError(s.what + " '" + name + " holds " + count +
                         " value(s) that are not finite in float32, the first at " + where + overflow);
      throw InputError(s.what + " '" + name + " holds " + count + " non-finite value(s) (NaN/Inf), the first at " +
                       where + "; pass --allow-nonfinite to multiply anyway");
    }
  });
}

void refuse_over_node_memory(const comm::Comm& comm, double need, const std::string& what, const std::string& advice) {
  const comm::Comm node_comm = comm.split_node();
  const double node_need = node_comm.sum(need);
  const std::string host = comm.node().host;
  comm.step([&] {
    const double total = node_memory_bytes();
    if (total > 0 && node_need > total)
      throw InputError(fmt::format(
          "the {} rank(s) on {} need {:.1f} GiB of host memory for their blocks (this rank {:.1f} GiB: {}) but the "
          "node has {:.1f} GiB; {}",
          node_comm.size(), host, node_need / kGiB, need / kGiB, what, total / kGiB, advice));
  });
}

double node_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024.0;
  return 0;
}

}  // namespace tessera::job
