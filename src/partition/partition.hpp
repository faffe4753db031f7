#pragma once
// All index math of the distribution lives here: the process grid, block extents and offsets,
// which rank owns which block. Pure: no MPI, no I/O, unit-tested exhaustively on small sizes.
//
// C (M x N) is split into pr x pc blocks. Block rows differ in height by at most one, block
// columns likewise. Rank r < pr*pc sits at grid position (r / pc, r % pc) and owns block
// (i, j): it needs the A rows of block-row i (all K columns) and the B columns of block-column
// j (all K rows). Ranks r >= pr*pc are idle (P may exceed the number of useful blocks).
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::partition {

struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
};

// A rectangle of a matrix: rows x columns.
struct Rect {
  Range rows, cols;
  std::int64_t elements() const { return rows.size() * cols.size(); }
};
// The common part of two ranges (empty, at the later begin, where they do not meet).
Range intersect(const Range& p, const Range& q);
Rect intersect(const Rect& x, const Rect& y);

struct GridShape {
  int rows = 1;  // pr
  int cols = 1;  // pc
  int size() const { return rows * cols; }
  std::string str() const { return std::to_string(rows) + "x" + std::to_string(cols); }
  bool operator==(const GridShape& o) const { return rows == o.rows && cols == o.cols; }
};

// Split [0, extent) into `parts` contiguous ranges whose sizes differ by at most one; the
// first extent % parts ranges are one longer.
Range split(std::int64_t extent, int parts, int index);

// Parse "PRxPC" (e.g. "2x3"). Throws InputError naming the text and `option` (the option it
// came from, e.g. generate's "--chunk") on anything else.
GridShape parse_grid(const std::string& text, const std::string& option = "--grid");

// Cost model used to pick a grid for M, N, K on P ranks. Lower is better.
struct GridCost {
  std::int64_t max_block_elements = 0;  // largest C block: the compute on the slowest rank
  std::int64_t max_words = 0;           // A rows + B columns + C block held by one rank
  int ranks_used = 0;
};
GridCost grid_cost(std::int64_t m, std::int64_t n, std::int64_t k, GridShape g);

// Choose pr x pc with pr <= M, pc <= N, pr*pc <= P: first the smallest largest block (the
// critical path of the compute), then the fewest words a rank reads and holds (A panel +
// B panel + C block), then the fewest ranks. Ranks beyond pr*pc stay idle.
GridShape choose_grid(std::int64_t m, std::int64_t n, std::int64_t k, int nranks);

class Partition {
 public:
  // Throws InputError if a dimension is < 1, nranks < 1, or the grid needs more ranks than
  // nranks or has more block rows than M (block columns than N).
  Partition(std::int64_t m, std::int64_t n, std::int64_t k, int nranks, GridShape grid);

  std::int64_t m() const { return m_; }
  std::int64_t n() const { return n_; }
  std::int64_t k() const { return k_; }
  int nranks() const { return nranks_; }
  GridShape grid() const { return grid_; }

  bool active(int rank) const { return rank >= 0 && rank < grid_.size(); }
  int block_row(int rank) const { return rank / grid_.cols; }  // i; only for active ranks
  int block_col(int rank) const { return rank % grid_.cols; }  // j
  int owner(int i, int j) const { return i * grid_.cols + j; }

  Range rows(int i) const { return split(m_, grid_.rows, i); }  // rows of C and A in block-row i
  Range cols(int j) const { return split(n_, grid_.cols, j); }  // cols of C and B in block-col j
  Range rows_of(int rank) const { return rows(block_row(rank)); }
  Range cols_of(int rank) const { return cols(block_col(rank)); }

  // Element counts a rank holds; 0 for idle ranks. 64-bit throughout.
  std::int64_t a_elements(int rank) const;
  std::int64_t b_elements(int rank) const;
  std::int64_t c_elements(int rank) const;
  double flops(int rank) const;  // 2 * rows * cols * K

 private:
  std::int64_t m_, n_, k_;
  int nranks_;
  GridShape grid_;
};

// Elements of rank 0's spare buffer when it gathers the C blocks of `part` (job/gather.hpp): the
// largest of the blocks that arrive into it (the odd-numbered ones).
std::int64_t gather_spare_elements(const Partition& part);

// The ksplit algorithm (algorithms/ksplit.cpp): the P ranks split K instead of C. Rank r multiplies
// A[:, K_r] (all M rows) by B[K_r, :] (all N columns) into a partial C of the full M x N, and
// the partials are summed. K_r = split(K, P, r): contiguous, sizes differing by at most one;
// when K < P the last P - K ranges are empty (those ranks contribute zeros).
class KSplit {
 public:
  // Throws InputError if a dimension is < 1 or nranks < 1.
  KSplit(std::int64_t m, std::int64_t n, std::int64_t k, int nranks);

  std::int64_t m() const { return m_; }
  std::int64_t n() const { return n_; }
  std::int64_t k() const { return k_; }
  int nranks() const { return nranks_; }

  Range k_range(int rank) const { return split(k_, nranks_, rank); }             // may be empty
  std::int64_t a_elements(int rank) const { return m_ * k_range(rank).size(); }  // M x |K_r|
  std::int64_t b_elements(int rank) const { return k_range(rank).size() * n_; }  // |K_r| x N
  std::int64_t c_elements() const { return m_ * n_; }                            // the partial C
  double flops(int rank) const;                                                  // 2 * M * N * |K_r|

 private:
  std::int64_t m_, n_, k_;
  int nranks_;
};

// ksplit's C in row bands summed by reduce-scatter (algorithms/ksplit.cpp): `count` bands, each of
// `ranks` pieces of `piece` rows, piece = ceil(M / (count * ranks)); rank r keeps piece r of every
// band. The bands cover M rows and more: the last band is padded with rows beyond M (zero rows of
// A, whose products are dropped), so that every piece has the same size (NCCL's reduce-scatter
// takes one count).
class ScatterBands {
 public:
  // Throws InputError if m < 1, ranks < 1 or count < 1.
  ScatterBands(std::int64_t m, int ranks, int count);
  int count() const { return count_; }
  std::int64_t piece() const { return piece_; }
  std::int64_t rows() const { return piece_ * ranks_; }  // of a band, padding included
  Range band(int t) const { return {t * rows(), (t + 1) * rows()}; }
  // Rank r's rows of band t within C (empty where they are all padding).
  Range mine(int t, int r) const;

 private:
  std::int64_t m_, piece_;
  int ranks_, count_;
};

// The summa algorithm (algorithms/summa.cpp) on a pr x pc grid: rank (i, j) holds A(i, j) = the rows
// of block-row i by the K columns summa_k_cols(j), and B(i, j) = the K rows summa_k_rows(i) by
// the columns of block-column j. K is walked in panels: each lies inside one rank column's A
// columns and one rank row's B rows (owner_col, owner_row), and is at most max_width wide.
inline Range summa_k_cols(std::int64_t k, int pc, int j) { return split(k, pc, j); }
inline Range summa_k_rows(std::int64_t k, int pr, int i) { return split(k, pr, i); }

struct SummaPanel {
  std::int64_t begin = 0, width = 0;  // K indices [begin, begin + width)
  int owner_col = 0;                  // the grid column whose ranks hold these A columns
  int owner_row = 0;                  // the grid row whose ranks hold these B rows
};

// Throws InputError if k < 1, a grid side < 1 or max_width < 1.
std::vector<SummaPanel> summa_panels(std::int64_t k, GridShape grid, std::int64_t max_width);

}  // namespace tessera::partition
