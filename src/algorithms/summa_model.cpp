// summa's cost model (summa_model.hpp).
#include "algorithms/summa_model.hpp"

#include <algorithm>
#include <climits>
#include <vector>

#include "comm/exchange.hpp"

namespace tessera::algorithms::summa_model {

std::int64_t panel_width(const Problem& p, const Setting& s, std::int64_t asked) {
  std::int64_t w = std::min(p.k, asked > 0 ? asked : s.gpu ? kWidthGpu : kWidthCpu);
  if (comm::int_counts(s.comm)) {
    const partition::Partition part(p.m, p.n, p.k, p.ranks, p.grid);
    const std::int64_t side = std::max(part.rows_of(0).size(), part.cols_of(0).size());
    const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
    w = std::max<std::int64_t>(1, std::min<std::int64_t>(w, INT_MAX / (side * es)));
  }
  return w;
}

namespace {

constexpr int kRoot = 0;

// Nodes spanned by grid row i and grid column j (ranks placed in blocks of p.ranks_per_node: a
// row's ranks are consecutive, a column's ranks pc apart).
int row_span(const Problem& p, int i) {
  const int first = i * p.grid.cols;
  return p.node_of(first + p.grid.cols - 1) - p.node_of(first) + 1;
}
int col_span(const Problem& p, int j) {
  if (p.grid.cols >= p.ranks_per_node) return p.grid.rows;  // each of its ranks on another node
  return p.node_of((p.grid.rows - 1) * p.grid.cols + j) - p.node_of(j) + 1;
}

// How many times one panel of a line (a grid row or column: `ranks` ranks over `span` nodes, the
// first of them `first`, `stride` apart) crosses a node's link on its way, as Open MPI 4.1's
// MPI_Ibcast (coll/libnbc) sends it: up to 4 ranks, the owner sends to each (its link carries a
// copy for every rank of the line on another node; averaged over the owners, who take turns); more
// ranks, a binomial tree below 64 KiB (ceil(log2(span)) crossings on the way) and a chain from
// rank to rank above (a crossing wherever the chain leaves a node: span - 1).
double crossings(const Problem& p, int first, int stride, int ranks, int span, std::int64_t panel_bytes) {
  if (span <= 1) return 0;
  if (ranks > 4) {
    if (panel_bytes >= 65536) return span - 1;
    int steps = 0;
    while ((1 << steps) < span) ++steps;
    return steps;
  }
  double copies = 0;
  for (int o = 0; o < ranks; ++o)
    for (int r = 0; r < ranks; ++r) copies += p.node_of(first + r * stride) != p.node_of(first + o * stride);
  return copies / ranks;
}

// Host MPI across nodes (Problem::multi_node): the seconds `rank` spends in its panels' broadcasts,
// and the bytes that cross its node's link. A grid row (column) whose ranks are on more than one
// node carries all of its A (B) panels through its nodes' links, crossings() times each, and every
// rank of a node waits for all the traffic of its node's link (the broadcasts of one panel run
// together on every line). A line within one node goes at the network (shared-memory) rate and
// costs what the rank receives. Each crossing of a panel adds the internode latency.
struct LineTraffic {
  double seconds = 0;
  std::int64_t internode_bytes = 0;
};
LineTraffic panel_traffic(const Problem& p, const partition::Partition& part, std::int64_t width, int bands,
                          const MachineModel& m, int rank) {
  const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
  const auto grid = part.grid();
  const int busy = grid.size();
  const auto a_line = [&](int i) { return part.rows(i).size() * p.k * es; };          // row i's A panels
  const auto b_line = [&](int j) { return p.k * part.cols(j).size() * es * bands; };  // column j's B panels
  const auto row_cross = [&](int i) {
    return grid.cols > 1 ? crossings(p, i * grid.cols, 1, grid.cols, row_span(p, i), part.rows(i).size() * width * es)
                         : 0.0;
  };
  const auto col_cross = [&](int j) {
    return grid.rows > 1 ? crossings(p, j, grid.cols, grid.rows, col_span(p, j), width * part.cols(j).size() * es)
                         : 0.0;
  };
  // The node's link: every line across nodes with a rank on it.
  const int node = p.node_of(rank);
  const int first = node * p.ranks_per_node, last = std::min(busy, first + p.ranks_per_node) - 1;
  double link_bytes = 0;
  for (int i = first / grid.cols; i <= last / grid.cols; ++i)
    link_bytes += static_cast<double>(a_line(i)) * row_cross(i);
  std::vector<bool> seen(static_cast<std::size_t>(grid.cols), false);
  for (int r = first; r <= last; ++r) {
    const int j = part.block_col(r);
    if (seen[static_cast<std::size_t>(j)]) continue;
    seen[static_cast<std::size_t>(j)] = true;
    link_bytes += static_cast<double>(b_line(j)) * col_cross(j);
  }
  LineTraffic t;
  const int i = part.block_row(rank), j = part.block_col(rank);
  const double across_row = row_cross(i), across_col = col_cross(j);
  const double panels = static_cast<double>(partition::summa_panels(p.k, grid, width).size());
  t.seconds =
      link_bytes / m.internode_bytes_per_s + panels * m.internode_latency_seconds * (across_row + bands * across_col);
  t.internode_bytes = (across_row > 0 ? a_line(i) : 0) + (across_col > 0 ? b_line(j) : 0);
  // Lines within one node: what the rank receives, at the network rate.
  const std::int64_t ka = partition::summa_k_cols(p.k, grid.cols, j).size();
  const std::int64_t kb = partition::summa_k_rows(p.k, grid.rows, i).size();
  const std::int64_t a_in = grid.cols > 1 && across_row == 0 ? part.rows(i).size() * (p.k - ka) * es : 0;
  const std::int64_t b_in = grid.rows > 1 && across_col == 0 ? (p.k - kb) * part.cols(j).size() * es * bands : 0;
  t.seconds += static_cast<double>(a_in + b_in) / m.network_bytes_per_s;
  return t;
}

}  // namespace

// One rank's footprint when its C block is computed in `bands` row bands.
RankFootprint cost(const Problem& p, const Setting& s, const MachineModel& m, int rank, int bands) {
  const partition::Partition part(p.m, p.n, p.k, p.ranks, p.grid);
  RankFootprint f;
  if (!part.active(rank)) return f;
  const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
  const auto grid = part.grid();
  const int i = part.block_row(rank), j = part.block_col(rank);
  f.rows = part.rows_of(rank).size();
  f.cols = part.cols_of(rank).size();
  const std::int64_t ka = partition::summa_k_cols(p.k, grid.cols, j).size();
  const std::int64_t kb = partition::summa_k_rows(p.k, grid.rows, i).size();
  const std::int64_t w = s.panel_width, band_rows = (f.rows + bands - 1) / bands;
  const std::int64_t own_a = f.rows * ka * es, own_b = kb * f.cols * es, own = own_a + own_b;
  const std::int64_t c = f.rows * f.cols * es, band_c = band_rows * f.cols * es;
  const std::int64_t slots = backend::PanelProduct::kSlots * (band_rows + f.cols) * w * es;
  const bool nccl = s.nccl(), gathered = !s.in_place_write && grid.size() > 1;
  f.nccl_groups = nccl ? (grid.cols > 1) + (grid.rows > 1) + gathered : 0;
  // Host slots: the CPU's panels, or a GPU's page-locked staging for panels that arrive by host
  // MPI. CPU: a scratch C for each panel's product; GPU: the backend's panel product (C, the
  // slots and, unless the kernel adds into C itself, a scratch C).
  const bool host_slots = !s.gpu || (s.comm == comm::Path::host && grid.size() > 1);
  f.host_bytes = own + c + (host_slots ? slots : 0) + (s.gpu ? 0 : band_c) + f.nccl_groups * m.nccl_host_bytes_per_comm;
  const backend::DeviceUse product{backend::DeviceUse::panel_product, s.kernel, p.dtype, band_rows, f.cols, w};
  f.gpu_bytes = s.gpu ? backend::device_bytes(s.backend(), product) + f.nccl_groups * m.nccl_gpu_bytes_per_comm : 0;
  if (nccl && rank == kRoot && gathered) f.gpu_bytes += m.nccl_p2p_receive_gpu_bytes;  // the gather
  f.gathers_on_devices = nccl && gathered;
  f.read_bytes = own;
  // Every band takes all of K's panels again: A's rows of the band, B's panels whole.
  const std::int64_t a_in = grid.cols > 1 ? f.rows * (p.k - ka) * es : 0;
  const std::int64_t b_in = grid.rows > 1 ? (p.k - kb) * f.cols * es : 0;
  f.recv_bytes = a_in + bands * b_in;
  f.send_bytes = rank == kRoot || !gathered ? 0 : c;
  f.write_bytes = gathered ? 0 : c;
  const double link = nccl ? m.device_link_bytes_per_s : m.network_bytes_per_s;
  const double compute = part.flops(rank) / m.flops(s.gpu, p.dtype);
  const double staging = s.gpu && !nccl ? static_cast<double>(f.recv_bytes) / m.h2d_bytes_per_s : 0;
  const double copies = s.gpu ? static_cast<double>(own_a + bands * own_b) / m.h2d_bytes_per_s +
                                    static_cast<double>(c) / m.d2h_bytes_per_s
                              : 0;
  f.read_seconds = static_cast<double>(own) / m.read_bytes_per_s;
  const bool across = p.multi_node() && !nccl;  // NCCL across nodes: its own transport, not modelled
  if (across) {
    const LineTraffic t = panel_traffic(p, part, w, bands, m, rank);
    const double send =
        rank == kRoot || !gathered
            ? 0
            : static_cast<double>(f.send_bytes) /
                  (p.node_of(rank) == p.node_of(kRoot) ? m.network_bytes_per_s : m.internode_bytes_per_s);
    f.comm_seconds = t.seconds + send;
    f.internode_bytes = t.internode_bytes + (p.node_of(rank) == p.node_of(kRoot) ? 0 : f.send_bytes);
    // On the CPU a panel's multiply waits for the panel (no second stream to overlap on); a GPU
    // multiplies while the next panel travels.
    // The send of a gathered block is rank 0's gather, counted there (footprint.cpp).
    f.compute_seconds = s.gpu ? std::max(compute, t.seconds + staging + copies) : compute + t.seconds;
  } else {
    const double panels = static_cast<double>(f.recv_bytes) / link + staging;
    f.comm_seconds = static_cast<double>(f.recv_bytes + f.send_bytes) / link;
    f.compute_seconds = std::max(compute, panels + copies) + static_cast<double>(f.send_bytes) / link;
  }
  // A band's C is written while the next band computes: the last band's write is not hidden.
  const double write = static_cast<double>(f.write_bytes) / m.write_bytes_per_s;
  f.write_seconds = bands > 1 ? std::max(write / bands, write - f.compute_seconds * (bands - 1) / bands) : write;
  return f;
}

int choose_bands(const Problem& p, const Setting& s, const MachineModel& m, int asked) {
  if (!s.in_place_write) return 1;  // gathered: one band, sent whole
  const partition::Partition part(p.m, p.n, p.k, p.ranks, p.grid);
  const std::int64_t fewest_rows = part.rows(part.grid().rows - 1).size();
  if (asked > 0) return static_cast<int>(std::min<std::int64_t>(asked, fewest_rows));
  const std::int64_t block = part.c_elements(0) * static_cast<std::int64_t>(dtype_size(p.dtype));
  if (block < kBandMinBytes) return 1;
  return fastest_bands(
      1, kMostBands, [&](int b) { return cost(p, s, m, 0, b).seconds(); }, [&](int b) { return b <= fewest_rows; });
}

}  // namespace tessera::algorithms::summa_model
