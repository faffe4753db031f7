#include "job/dryrun.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backend/backend.hpp"
#include "comm/exchange.hpp"
#include "job/gather.hpp"
#include "job/ksplit.hpp"
#include "job/summa.hpp"

namespace tessera::job {

namespace {

// The panels algorithm: rank (i, j) holds the A rows of block-row i, the B columns of block-column
// j and its C block; gathers C to rank 0.
RankPlan plan_panels(const partition::Partition& part, int rank, DType dtype, bool gpu, const PlanChoice& choice,
                     const MachineModel& model) {
  RankPlan p;
  if (!part.active(rank)) return p;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  p.rows = part.rows_of(rank).size();
  p.cols = part.cols_of(rank).size();
  const std::int64_t ab = (part.a_elements(rank) + part.b_elements(rank)) * es;
  const std::int64_t c = part.c_elements(rank) * es;
  p.host_bytes = ab + c;
  // Out of core under --gpu-memory: tiles fill the limit at most. In core, a large GEMM runs
  // pipelined (backend.hpp): all of B, and two tiles of 1 / kPipelineTiles of the A and C rows.
  const std::int64_t k = part.k(), tile = (p.rows + backend::kPipelineTiles - 1) / backend::kPipelineTiles;
  const std::int64_t pipelined = (k * p.cols + 2 * tile * (k + p.cols)) * es;
  const bool pipelines = ab + c >= static_cast<std::int64_t>(backend::kPipelineMinBytes) &&
                         p.rows >= 2 * backend::kPipelineTiles;
  const std::int64_t in_core = pipelines ? std::min(ab + c, pipelined) : ab + c;
  p.gpu_bytes = !gpu ? 0 : choice.gpu_memory_limit > 0 ? std::min(in_core, choice.gpu_memory_limit) : in_core;
  p.read_bytes = ab;
  p.send_bytes = rank == 0 || choice.in_place_write ? 0 : c;
  const double compute = part.flops(rank) / (gpu ? model.gpu_flops : model.cpu_flops);
  const double copies = gpu ? static_cast<double>(ab) / model.h2d_bytes_per_s + static_cast<double>(c) / model.d2h_bytes_per_s : 0;
  p.seconds = static_cast<double>(ab) / model.read_bytes_per_s + copies + compute +
              static_cast<double>(p.send_bytes) / model.gather_bytes_per_s;
  return p;
}

// summa: rank (i, j) holds A(i, j), B(i, j), its C block and two panel slots (job/summa.hpp);
// receives the panels it does not own; gathers C to rank 0. Panels overlap the compute.
RankPlan plan_summa(const partition::Partition& part, int rank, DType dtype, bool gpu, const PlanChoice& choice,
                    const MachineModel& model) {
  RankPlan p;
  if (!part.active(rank)) return p;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  const auto grid = part.grid();
  const int i = part.block_row(rank), j = part.block_col(rank);
  p.rows = part.rows_of(rank).size();
  p.cols = part.cols_of(rank).size();
  const std::int64_t k = part.k();
  const std::int64_t ka = partition::summa_k_cols(k, grid.cols, j).size(), kb = partition::summa_k_rows(k, grid.rows, i).size();
  const std::int64_t w = std::min(k, choice.panel_width > 0 ? choice.panel_width : gpu ? kSummaWidthGpu : kSummaWidthCpu);
  const std::int64_t own = (p.rows * ka + kb * p.cols) * es;
  const std::int64_t c = p.rows * p.cols * es;
  const std::int64_t slots = backend::PanelProduct::kSlots * (p.rows + p.cols) * w * es;
  // CPU: a scratch C for each panel's product; GPU: C, the slots and (unless the kernel adds
  // into C itself) a scratch C on the device.
  const bool nccl = gpu && choice.comm == "nccl";
  const int comms = nccl ? (grid.cols > 1) + (grid.rows > 1) + (grid.size() > 1 && !choice.in_place_write) : 0;
  // Host slots: the CPU's panels, or a GPU's page-locked staging for panels that arrive by host MPI.
  const bool host_slots = !gpu || (choice.comm == "host" && grid.size() > 1);
  p.host_bytes = own + c + (host_slots ? slots : 0) + (gpu ? 0 : c) + comms * model.nccl_host_bytes_per_comm;
  p.gpu_bytes = gpu ? (choice.accumulating_kernel ? 1 : 2) * c + slots + comms * model.nccl_gpu_bytes_per_comm : 0;
  if (nccl && rank == 0 && grid.size() > 1 && !choice.in_place_write)
    p.gpu_bytes += model.nccl_p2p_receive_gpu_bytes;  // the gather
  p.read_bytes = own;
  p.recv_bytes = ((grid.cols > 1 ? p.rows * (k - ka) : 0) + (grid.rows > 1 ? (k - kb) * p.cols : 0)) * es;
  p.send_bytes = rank == 0 || choice.in_place_write ? 0 : c;
  const double compute = part.flops(rank) / (gpu ? model.gpu_flops : model.cpu_flops);
  const double panels = static_cast<double>(p.recv_bytes) / (nccl ? model.device_link_bytes_per_s : model.gather_bytes_per_s) +
                        (gpu && !nccl ? static_cast<double>(p.recv_bytes) / model.h2d_bytes_per_s : 0);
  const double copies = gpu ? static_cast<double>(own) / model.h2d_bytes_per_s + static_cast<double>(c) / model.d2h_bytes_per_s : 0;
  const double gather = static_cast<double>(p.send_bytes) / (nccl ? model.device_link_bytes_per_s : model.gather_bytes_per_s);
  p.seconds = static_cast<double>(own) / model.read_bytes_per_s + std::max(compute, panels + copies) + gather;
  return p;
}

// ksplit: rank r holds A[:, K_r], B[K_r, :] and (rank 0, or every rank when summing on the host)
// all of C; the partials are summed onto rank 0.
RankPlan plan_ksplit(std::int64_t m, std::int64_t n, std::int64_t k, int ranks, int rank, DType dtype, bool gpu,
                     const PlanChoice& choice, const MachineModel& model) {
  RankPlan p;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  const partition::KSplit ks(m, n, k, ranks);
  const std::int64_t kr = ks.k_range(rank).size();
  p.rows = m;
  p.cols = n;
  const std::int64_t own = (m * kr + kr * n) * es, c = m * n * es;
  const bool nccl = gpu && choice.comm == "nccl";
  // Summing on the host: every rank holds its partial C, and MPI_Reduce takes a receive buffer
  // of one piece on the ranks that combine (job/ksplit.cpp sums in pieces).
  p.host_bytes = own + (nccl ? (rank == 0 ? c : 0)
                             : c + (ranks > 1 ? std::min<std::int64_t>(c, static_cast<std::int64_t>(comm::kReducePieceBytes)) : 0));
  // Chunks of K (backend.hpp: two in flight) and, when chunked and the kernel does not add into
  // C itself, a scratch C.
  const bool chunked = kr >= backend::kKsplitChunkMinK;
  const std::int64_t chunk = (kr + backend::kKsplitChunks - 1) / backend::kKsplitChunks;
  p.gpu_bytes = gpu ? (chunked ? 2 * (m + n) * chunk * es + (choice.accumulating_kernel ? 1 : 2) * c : own + c) : 0;
  if (nccl && ranks > 1) {
    p.gpu_bytes += model.nccl_gpu_bytes_per_comm;
    p.host_bytes += model.nccl_host_bytes_per_comm;
  }
  p.read_bytes = own;
  p.send_bytes = ranks > 1 && rank != 0 ? c : 0;
  const double compute = ks.flops(rank) / (gpu ? model.gpu_flops : model.cpu_flops);
  const double reduce = ranks > 1 ? static_cast<double>(c) / (nccl ? model.device_link_bytes_per_s : model.gather_bytes_per_s) : 0;
  const double copies = gpu ? static_cast<double>(own) / model.h2d_bytes_per_s + static_cast<double>(c) / model.d2h_bytes_per_s : 0;
  p.seconds = static_cast<double>(own) / model.read_bytes_per_s + copies + compute + reduce;
  return p;
}

std::string gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

DryRun plan_run(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, int ranks, const partition::GridShape& grid,
                bool gpu, const PlanChoice& choice, const MachineModel& model) {
  const bool ksplit = choice.algorithm == "ksplit";
  const partition::Partition part(m, n, k, ranks, ksplit ? partition::GridShape{1, 1} : grid);
  DryRun d;
  d.choice = choice;
  d.grid = ksplit ? partition::GridShape{1, 1} : grid;
  d.ranks = ranks;
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  const auto plan = [&](int r) {
    RankPlan p = ksplit                         ? plan_ksplit(m, n, k, ranks, r, dtype, gpu, choice, model)
                 : choice.algorithm == "summa" ? plan_summa(part, r, dtype, gpu, choice, model)
                                               : plan_panels(part, r, dtype, gpu, choice, model);
    if (ksplit || part.active(r)) p.host_bytes += model.host_overhead_bytes + (gpu ? model.gpu_host_overhead_bytes : 0);
    return p;
  };
  d.root = plan(0);
  const int busy = ksplit ? ranks : d.grid.size();
  if (busy == 1) d.largest = d.root;
  RankPlan max_other;
  for (int r = 0; r < busy; ++r) {  // at most 100,000 ranks: look at each
    const RankPlan p = r == 0 ? d.root : plan(r);
    d.total_read_bytes += p.read_bytes;
    d.total_comm_bytes += p.send_bytes + p.recv_bytes;
    d.max_send_bytes = std::max(d.max_send_bytes, p.send_bytes);
    d.max_recv_bytes = std::max(d.max_recv_bytes, p.recv_bytes);
    if (r > 0 && (r == 1 || p.seconds > d.largest.seconds)) d.largest = p;
    if (r > 0) {  // "others up to": the most any other rank holds, reads and sends
      max_other.host_bytes = std::max(max_other.host_bytes, p.host_bytes);
      max_other.gpu_bytes = std::max(max_other.gpu_bytes, p.gpu_bytes);
      max_other.read_bytes = std::max(max_other.read_bytes, p.read_bytes);
    }
  }
  if (busy > 1) {
    d.largest.host_bytes = max_other.host_bytes;
    d.largest.gpu_bytes = max_other.gpu_bytes;
    d.largest.read_bytes = max_other.read_bytes;
  }
  // panels and summa: every rank writes its own block in place, or rank 0 writes all of C,
  // receiving every other block into a spare buffer while it writes the one before (job/gather.hpp).
  const bool gather = !ksplit && !choice.in_place_write;
  if (gather && d.grid.size() > 1) d.root.host_bytes += gather_spare_elements(part) * es;
  const double receive = !gather ? 0 : static_cast<double>(m * n * es - d.root.rows * d.root.cols * es) /
                                          (gpu && choice.comm == "nccl" && choice.algorithm == "summa"
                                               ? model.device_link_bytes_per_s
                                               : model.gather_bytes_per_s);
  const double write = static_cast<double>(m * n * es) / model.write_bytes_per_s;
  // The writes overlap the receives (a block is written while the next arrives).
  d.predicted_seconds = std::max(d.largest.seconds, d.root.seconds) + std::max(receive, write);
  return d;
}

nlohmann::json DryRun::to_json() const {
  auto rank = [](const RankPlan& p) {
    return nlohmann::json{{"rows", p.rows},           {"cols", p.cols},         {"host_bytes", p.host_bytes},
                          {"gpu_bytes", p.gpu_bytes}, {"read_bytes", p.read_bytes}, {"recv_bytes", p.recv_bytes},
                          {"send_bytes", p.send_bytes}, {"seconds", p.seconds}};
  };
  return {{"algorithm", choice.algorithm},
          {"comm", choice.comm},
          {"grid", {{"rows", grid.rows}, {"cols", grid.cols}}},
          {"ranks", ranks},
          {"idle_ranks", choice.algorithm == "ksplit" ? 0 : ranks - grid.size()},
          {"rank0", rank(root)},
          {"largest", rank(largest)},
          {"total_read_bytes", total_read_bytes},
          {"total_comm_bytes", total_comm_bytes},
          {"max_send_bytes", max_send_bytes},
          {"max_recv_bytes", max_recv_bytes},
          {"write", (choice.algorithm == "ksplit" || !choice.in_place_write) ? "rank 0" : "in place"},
          {"predicted_seconds", predicted_seconds}};
}

std::string DryRun::to_text(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, bool gpu) const {
  const bool ksplit = choice.algorithm == "ksplit";
  std::string out = fmt::format("dry run: C({}x{}) = A({}x{}) * B({}x{}), {}, {} rank{} ({}), algorithm {}{}\n", m, n,
                                m, k, k, n, dtype_name(dtype), ranks, ranks == 1 ? "" : "s", gpu ? "GPU" : "CPU",
                                choice.algorithm, choice.algorithm == "panels" ? "" : ", comm " + choice.comm);
  if (ksplit)
    out += fmt::format("  grid          K split over {} rank{}\n", ranks, ranks == 1 ? "" : "s");
  else
    out += fmt::format("  grid          {}x{}{}\n", grid.rows, grid.cols,
                       ranks > grid.size() ? fmt::format(" ({} idle rank{})", ranks - grid.size(),
                                                         ranks - grid.size() == 1 ? "" : "s")
                                           : "");
  out += fmt::format("  largest block {}x{}{}\n", largest.rows, largest.cols, ksplit ? " (a partial of all of C)" : "");
  out += fmt::format("  host memory   rank 0 {}, others up to {}\n", gib(root.host_bytes), gib(largest.host_bytes));
  if (gpu) out += fmt::format("  GPU memory    up to {} per rank\n", gib(std::max(root.gpu_bytes, largest.gpu_bytes)));
  out += fmt::format("  file reads    {} per rank (largest), {} in all\n", gib(largest.read_bytes), gib(total_read_bytes));
  if (choice.algorithm == "summa")
    out += fmt::format("  panels in     {} per rank (largest), broadcast along grid rows and columns\n",
                       gib(max_recv_bytes));
  if (ksplit || !choice.in_place_write)
    out += fmt::format("  {}     {} per rank (largest), {} between ranks in all\n", ksplit ? "reduce   " : "to rank 0",
                       gib(max_send_bytes), gib(total_comm_bytes));
  else if (total_comm_bytes > 0)
    out += fmt::format("  between ranks {} in all; every rank writes its own C block\n", gib(total_comm_bytes));
  out += fmt::format("  predicted     {:.2f} s (slowest rank {:.2f} s, then {} C)\n", predicted_seconds,
                     std::max(root.seconds, largest.seconds),
                     ksplit || !choice.in_place_write ? "rank 0 receives and writes" : "the ranks write");
  return out;
}

}  // namespace tessera::job
