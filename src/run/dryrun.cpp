#include "run/dryrun.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::run {

namespace {

RankPlan plan_rank(const dist::Partition& part, int rank, DType dtype, bool gpu, const MachineModel& model) {
  RankPlan p;
  if (!part.active(rank)) return p;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  p.rows = part.rows_of(rank).size();
  p.cols = part.cols_of(rank).size();
  const std::int64_t ab = (part.a_elements(rank) + part.b_elements(rank)) * es;
  const std::int64_t c = part.c_elements(rank) * es;
  p.host_bytes = ab + c + model.host_overhead_bytes + (gpu ? model.gpu_host_overhead_bytes : 0);
  p.gpu_bytes = gpu ? ab + c : 0;
  p.read_bytes = ab;
  p.send_bytes = rank == 0 ? 0 : c;
  const double compute = part.flops(rank) / (gpu ? model.gpu_flops : model.cpu_flops);
  const double copies = gpu ? static_cast<double>(ab) / model.h2d_bytes_per_s + static_cast<double>(c) / model.d2h_bytes_per_s : 0;
  p.seconds = static_cast<double>(ab) / model.read_bytes_per_s + copies + compute +
              static_cast<double>(p.send_bytes) / model.gather_bytes_per_s;
  return p;
}

std::string gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

DryRun plan_run(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, int ranks, const dist::GridShape& grid,
                bool gpu, const MachineModel& model) {
  const dist::Partition part(m, n, k, ranks, grid);
  DryRun d;
  d.grid = grid;
  d.ranks = ranks;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  d.root = plan_rank(part, 0, dtype, gpu, model);
  d.largest = d.root;
  std::int64_t largest_c = 0;
  for (int r = 0; r < grid.size(); ++r) {  // at most 100,000 blocks: look at each
    const RankPlan p = plan_rank(part, r, dtype, gpu, model);
    d.total_read_bytes += p.read_bytes;
    d.total_comm_bytes += p.send_bytes;
    largest_c = std::max(largest_c, p.rows * p.cols);
    if (p.seconds > d.largest.seconds) d.largest = p;
  }
  // Rank 0 receives one block at a time into one buffer, and writes all of C.
  if (grid.size() > 1) d.root.host_bytes += largest_c * es;
  const double receive = static_cast<double>(d.total_comm_bytes) / model.gather_bytes_per_s;
  const double write = static_cast<double>(m * n * es) / model.write_bytes_per_s;
  d.predicted_seconds = std::max(d.largest.seconds, d.root.seconds) + receive + write;
  return d;
}

nlohmann::json DryRun::to_json() const {
  auto rank = [](const RankPlan& p) {
    return nlohmann::json{{"rows", p.rows},           {"cols", p.cols},         {"host_bytes", p.host_bytes},
                          {"gpu_bytes", p.gpu_bytes}, {"read_bytes", p.read_bytes}, {"send_bytes", p.send_bytes},
                          {"seconds", p.seconds}};
  };
  return {{"grid", {{"rows", grid.rows}, {"cols", grid.cols}}},
          {"ranks", ranks},
          {"idle_ranks", ranks - grid.size()},
          {"rank0", rank(root)},
          {"largest", rank(largest)},
          {"total_read_bytes", total_read_bytes},
          {"total_comm_bytes", total_comm_bytes},
          {"predicted_seconds", predicted_seconds}};
}

std::string DryRun::to_text(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, bool gpu) const {
  std::string out = fmt::format("dry run: C({}x{}) = A({}x{}) * B({}x{}), {}, {} rank{} ({}), algorithm panels\n", m, n,
                                m, k, k, n, dtype_name(dtype), ranks, ranks == 1 ? "" : "s", gpu ? "GPU" : "CPU");
  out += fmt::format("  grid          {}x{}{}\n", grid.rows, grid.cols,
                     ranks > grid.size() ? fmt::format(" ({} idle rank{})", ranks - grid.size(),
                                                       ranks - grid.size() == 1 ? "" : "s")
                                         : "");
  out += fmt::format("  largest block {}x{}\n", largest.rows, largest.cols);
  out += fmt::format("  host memory   rank 0 {} (incl. a receive buffer), others up to {}\n", gib(root.host_bytes),
                     gib(largest.host_bytes));
  if (gpu) out += fmt::format("  GPU memory    up to {} per rank\n", gib(std::max(root.gpu_bytes, largest.gpu_bytes)));
  out += fmt::format("  file reads    {} per rank (largest), {} in all\n", gib(largest.read_bytes), gib(total_read_bytes));
  out += fmt::format("  to rank 0     {} per rank (largest block), {} in all\n", gib(largest.send_bytes),
                     gib(total_comm_bytes));
  out += fmt::format("  predicted     {:.2f} s (slowest rank {:.2f} s, then rank 0 receives and writes C)\n",
                     predicted_seconds, std::max(root.seconds, largest.seconds));
  return out;
}

}  // namespace tessera::run
