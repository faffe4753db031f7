#include "partition/partition.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <tuple>

#include "core/error.hpp"

namespace tessera::partition {

Range intersect(const Range& p, const Range& q) {
  const std::int64_t b = std::max(p.begin, q.begin);
  return Range{b, std::max(b, std::min(p.end, q.end))};
}

Rect intersect(const Rect& x, const Rect& y) { return {intersect(x.rows, y.rows), intersect(x.cols, y.cols)}; }

Range split(std::int64_t extent, int parts, int index) {
  const std::int64_t base = extent / parts;
  const std::int64_t extra = extent % parts;
  const std::int64_t i = index;
  const std::int64_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

GridShape parse_grid(const std::string& text, const std::string& option) {
  const auto bad = [&]() {
    return InputError(
        "invalid " + option + " '" + text + "': expected " +
        (option == "--grid" ? "PRxPC with positive integers, e.g. 2x3" : "RxC with positive integers, e.g. 256x256"));
  };
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos || x == 0 || x + 1 >= text.size()) throw bad();
  const auto parse = [&](const std::string& s) {
    if (s.size() > 6 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) throw bad();
    const int v = std::stoi(s);
    if (v < 1) throw bad();
    return v;
  };
  return {parse(text.substr(0, x)), parse(text.substr(x + 1))};
}

static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Costs only rank grids against each other: a product or sum beyond int64 saturates (no overflow
// UB on absurd shapes, which a corrupt or hostile HDF5 header can claim; Partition refuses them).
static std::int64_t mul_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
static std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

GridCost grid_cost(std::int64_t m, std::int64_t n, std::int64_t k, GridShape g) {
  const std::int64_t rows = ceil_div(m, g.rows);
  const std::int64_t cols = ceil_div(n, g.cols);
  const std::int64_t block = mul_sat(rows, cols);
  return {block, add_sat(add_sat(mul_sat(rows, k), mul_sat(k, cols)), block), g.size()};
}

GridShape choose_grid(std::int64_t m, std::int64_t n, std::int64_t k, int nranks) {
  GridShape best{1, 1};
  auto key = [&](GridShape g) {
    const GridCost c = grid_cost(m, n, k, g);
    return std::make_tuple(c.max_block_elements, c.max_words, c.ranks_used, g.rows);
  };
  auto best_key = key(best);
  const std::int64_t max_pr = std::min<std::int64_t>(m, nranks);
  for (int pr = 1; pr <= max_pr; ++pr) {
    const std::int64_t max_pc = std::min<std::int64_t>(n, nranks / pr);
    for (int pc = 1; pc <= max_pc; ++pc) {
      const GridShape g{pr, pc};
      const auto kk = key(g);
      if (kk < best_key) {
        best = g;
        best_key = kk;
      }
    }
  }
  return best;
}

Partition::Partition(std::int64_t m, std::int64_t n, std::int64_t k, int nranks, GridShape grid)
    : m_(m), n_(n), k_(k), nranks_(nranks), grid_(grid) {
  if (m < 1 || n < 1 || k < 1)
    throw InputError("matrix dimensions must be >= 1, got M=" + std::to_string(m) + " N=" + std::to_string(n) +
                     " K=" + std::to_string(k));
  // Every element and byte count (x8 for float64, A + B + C summed) must stay exact in int64.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 58;
  for (const auto& [name, r, c] : {std::tuple{"A", m, k}, std::tuple{"B", k, n}, std::tuple{"C", m, n}})
    if (r > kMaxElements / c)
      throw InputError(std::string(name) + " (" + std::to_string(r) + "x" + std::to_string(c) +
                       ") has more than 2^58 elements: too large to index");
  if (nranks < 1) throw InputError("need at least one rank");
  if (grid.rows < 1 || grid.cols < 1) throw InputError("grid " + grid.str() + " is empty");
  const std::int64_t grid_ranks = std::int64_t{grid.rows} * grid.cols;  // int would overflow: up to 999999^2
  if (grid_ranks > nranks)
    throw InputError("grid " + grid.str() + " needs " + std::to_string(grid_ranks) + " ranks but the job has " +
                     std::to_string(nranks));
  if (grid.rows > m)
    throw InputError("grid " + grid.str() + " has " + std::to_string(grid.rows) +
                     " block rows but C has only M=" + std::to_string(m) + " rows");
  if (grid.cols > n)
    throw InputError("grid " + grid.str() + " has " + std::to_string(grid.cols) +
                     " block columns but C has only N=" + std::to_string(n) + " columns");
}

std::int64_t Partition::a_elements(int rank) const { return active(rank) ? rows_of(rank).size() * k_ : 0; }
std::int64_t Partition::b_elements(int rank) const { return active(rank) ? k_ * cols_of(rank).size() : 0; }
std::int64_t Partition::c_elements(int rank) const {
  return active(rank) ? rows_of(rank).size() * cols_of(rank).size() : 0;
}
double Partition::flops(int rank) const {
  return 2.0 * static_cast<double>(c_elements(rank)) * static_cast<double>(k_);
}

KSplit::KSplit(std::int64_t m, std::int64_t n, std::int64_t k, int nranks) : m_(m), n_(n), k_(k), nranks_(nranks) {
  if (m < 1 || n < 1 || k < 1)
    throw InputError("matrix dimensions must be >= 1, got M=" + std::to_string(m) + " N=" + std::to_string(n) +
                     " K=" + std::to_string(k));
  if (nranks < 1) throw InputError("need at least one rank, got " + std::to_string(nranks));
}

double KSplit::flops(int rank) const {
  return 2.0 * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_range(rank).size());
}

std::vector<SummaPanel> summa_panels(std::int64_t k, GridShape grid, std::int64_t max_width) {
  if (k < 1 || grid.rows < 1 || grid.cols < 1 || max_width < 1)
    throw InputError("summa panels need K >= 1, a grid of at least 1x1 and a panel width >= 1 (got K=" +
                     std::to_string(k) + ", grid " + grid.str() + ", width " + std::to_string(max_width) + ")");
  std::vector<SummaPanel> panels;
  int col = 0, row = 0;  // owners of the current position; empty ranges (K < pc) are skipped
  for (std::int64_t at = 0; at < k;) {
    while (summa_k_cols(k, grid.cols, col).end <= at) ++col;
    while (summa_k_rows(k, grid.rows, row).end <= at) ++row;
    const std::int64_t end =
        std::min({at + max_width, summa_k_cols(k, grid.cols, col).end, summa_k_rows(k, grid.rows, row).end});
    panels.push_back({at, end - at, col, row});
    at = end;
  }
  return panels;
}

std::int64_t gather_spare_elements(const Partition& part) {
  std::int64_t most = 0;
  for (int r = 1; r < part.grid().size(); r += 2) most = std::max(most, part.c_elements(r));
  return most;
}

ScatterBands::ScatterBands(std::int64_t m, int ranks, int count) : m_(m), piece_(0), ranks_(ranks), count_(count) {
  if (m < 1 || ranks < 1 || count < 1)
    throw InputError("scatter bands need m, ranks and bands >= 1 (got " + std::to_string(m) + ", " +
                     std::to_string(ranks) + ", " + std::to_string(count) + ")");
  const std::int64_t pieces = std::int64_t{count} * ranks;
  piece_ = (m + pieces - 1) / pieces;
}

Range ScatterBands::mine(int t, int r) const {
  const std::int64_t begin = std::min(m_, t * rows() + r * piece_);
  return {begin, std::min(m_, begin + piece_)};
}

}  // namespace tessera::partition
