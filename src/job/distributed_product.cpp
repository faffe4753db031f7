#include "job/distributed_product.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "io/nonfinite.hpp"
#include "job/rank_report.hpp"
#include "job/result.hpp"
#include "partition/partition.hpp"

namespace tessera::job {
namespace {

using partition::intersect;
using partition::Range;
using partition::Rect;

int grid_size(const BlockGrid& g) { return g.grid_rows * g.grid_cols; }

// Rank `rank`'s block of `g` (empty beyond the grid).
Rect owned(const BlockGrid& g, int rank) {
  if (rank >= grid_size(g)) return {};
  return {partition::split(g.rows, g.grid_rows, rank / g.grid_cols),
          partition::split(g.cols, g.grid_cols, rank % g.grid_cols)};
}

std::string describe(const Rect& r) {
  return fmt::format("rows [{}, {}) x columns [{}, {}): {}x{}", r.rows.begin, r.rows.end, r.cols.begin, r.cols.end,
                     r.rows.size(), r.cols.size());
}

// What a product needs of A and B (as stored) for one block of C.
struct Needs {
  Rect a, b;
};

Needs needs_for(const Rect& c_block, std::int64_t k, bool ta, bool tb) {
  if (c_block.elements() == 0) return {};
  const Range all_k{0, k};
  return {ta ? Rect{all_k, c_block.rows} : Rect{c_block.rows, all_k},
          tb ? Rect{c_block.cols, all_k} : Rect{all_k, c_block.cols}};
}

// The descriptors as every rank must agree on them: shapes, grids, dtype, op, alpha, beta.
std::string agreed_text(const JobOptions& o, const DistributedMatrix& a, const DistributedMatrix& b,
                        const DistributedMatrix& c) {
  std::string text;
  for (const auto& [name, x] : {std::pair{"A", &a}, {"B", &b}, {"C", &c}})
    text += fmt::format("{} {}x{} over a {}x{} grid of {}; ", name, x->grid.rows, x->grid.cols, x->grid.grid_rows,
                        x->grid.grid_cols, dtype_name(x->local.dtype));
  const auto op = [](const char* name, bool transposed, bool conjugated) {
    return fmt::format("{}{}", name, conjugated ? "^H" : transposed ? "^T" : "");
  };
  return text + fmt::format("op(A) {}, op(B) {}, alpha {}{:+}i, beta {}{:+}i", op("A", o.a.transposed, o.conjugate_a),
                            op("B", o.b.transposed, o.conjugate_b), o.alpha, o.alpha_imag, o.beta, o.beta_imag);
}

void check_descriptors(const JobOptions& o, const DistributedMatrix& a, const DistributedMatrix& b,
                       const DistributedMatrix& c, const comm::Comm& comm, const std::string& rank0) {
  const std::string mine = agreed_text(o, a, b, c);
  if (mine != rank0)
    throw InputError(
        fmt::format("rank {} describes the product as '{}', rank 0 as '{}': every rank must give the same "
                    "shapes, grids, dtype, op, alpha and beta",
                    comm.rank(), mine, rank0));
  const bool ta = o.a.transposed, tb = o.b.transposed;
  const std::int64_t m = ta ? a.grid.cols : a.grid.rows, k = ta ? a.grid.rows : a.grid.cols;
  const std::int64_t kb = tb ? b.grid.cols : b.grid.rows, n = tb ? b.grid.rows : b.grid.cols;
  if (k != kb)
    throw InputError(fmt::format("inner dimensions disagree: op(A) is {}x{} but op(B) is {}x{}", m, k, kb, n));
  if (c.grid.rows != m || c.grid.cols != n)
    throw InputError(fmt::format("C is {}x{}, but op(A) op(B) is {}x{}", c.grid.rows, c.grid.cols, m, n));
  if (a.local.dtype != b.local.dtype || a.local.dtype != c.local.dtype)
    throw InputError("A, B and C must hold one dtype");
  for (const auto& [name, x] : {std::pair{"A", &a}, {"B", &b}, {"C", &c}}) {
    const BlockGrid& g = x->grid;
    if (g.rows < 0 || g.cols < 0 || g.grid_rows < 1 || g.grid_cols < 1)
      throw InputError(fmt::format("{} is {}x{} over a {}x{} grid: shapes are >= 0 and grids at least 1x1", name,
                                   g.rows, g.cols, g.grid_rows, g.grid_cols));
    if (grid_size(g) > comm.size())
      throw InputError(fmt::format("{}'s {}x{} grid needs {} ranks; the communicator has {}", name, g.grid_rows,
                                   g.grid_cols, grid_size(g), comm.size()));
    const Rect mine_block = owned(g, comm.rank());
    if (x->local.rows != mine_block.rows.size() || x->local.cols != mine_block.cols.size())
      throw InputError(fmt::format("rank {} gives a {}x{} block of {}, but {} ({}x{} over a {}x{} grid) gives it {}",
                                   comm.rank(), x->local.rows, x->local.cols, name, name, g.rows, g.cols, g.grid_rows,
                                   g.grid_cols, describe(mine_block)));
    if (x->local.ld < x->local.cols)
      throw InputError(fmt::format("rank {}'s block of {}: its rows are {} elements apart, fewer than its {} columns",
                                   comm.rank(), name, x->local.ld, x->local.cols));
    if (x->local.rows > 0 && x->local.cols > 0 && x->local.data == nullptr)
      throw InputError(fmt::format("rank {}'s block of {} has no memory: a null pointer", comm.rank(), name));
  }
}

// This rank's block of X in host memory: where it lies, or a copy of it from the GPU.
struct HostBlock {
  std::vector<unsigned char> copy;
  const unsigned char* data = nullptr;
  std::int64_t ld = 0;
};

HostBlock host_block(const MemoryMatrix& x) {
  HostBlock h{{}, static_cast<const unsigned char*>(x.data), x.ld};
  if (!x.device || x.rows == 0 || x.cols == 0) return h;
  const std::size_t es = dtype_size(x.dtype);
  h.copy.resize(static_cast<std::size_t>((x.rows - 1) * x.ld + x.cols) * es);
  backend::copy_device_to_host(h.copy.data(), x.data, h.copy.size());
  h.data = h.copy.data();
  return h;
}

// Copies rectangle `r` (global coordinates) from `from` (whose top-left is global (r0, c0), rows
// `ld` apart) into `to` (top-left (t0, u0), rows `to_ld` apart).
void copy_rect(const Rect& r, const unsigned char* from, std::int64_t r0, std::int64_t c0, std::int64_t ld,
               unsigned char* to, std::int64_t t0, std::int64_t u0, std::int64_t to_ld, std::size_t es) {
  const std::size_t row_bytes = static_cast<std::size_t>(r.cols.size()) * es;
  for (std::int64_t i = r.rows.begin; i < r.rows.end; ++i)
    std::memcpy(to + static_cast<std::size_t>((i - t0) * to_ld + (r.cols.begin - u0)) * es,
                from + static_cast<std::size_t>((i - r0) * ld + (r.cols.begin - c0)) * es, row_bytes);
}

// The part of X this rank needs (`need`, packed), gathered from the ranks that hold it.
std::vector<unsigned char> gather_needed(const DistributedMatrix& x, const Rect& need,
                                         const std::vector<Rect>& others_need, const comm::Comm& comm, int tag) {
  const std::size_t es = dtype_size(x.local.dtype);
  const Rect mine = owned(x.grid, comm.rank());
  const HostBlock block = host_block(x.local);
  std::vector<unsigned char> out(static_cast<std::size_t>(need.elements()) * es);
  std::vector<std::vector<unsigned char>> outgoing, incoming;
  std::vector<comm::Comm::Parcel> sends, receives;
  std::vector<Rect> incoming_rects;
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer == comm.rank()) continue;
    const Rect give = intersect(mine, others_need[static_cast<std::size_t>(peer)]);
    if (give.elements() > 0) {
      outgoing.emplace_back(static_cast<std::size_t>(give.elements()) * es);
      copy_rect(give, block.data, mine.rows.begin, mine.cols.begin, block.ld, outgoing.back().data(), give.rows.begin,
                give.cols.begin, give.cols.size(), es);
      sends.push_back({peer, outgoing.back().data(), outgoing.back().size()});
    }
    const Rect take = intersect(owned(x.grid, peer), need);
    if (take.elements() > 0) {
      incoming.emplace_back(static_cast<std::size_t>(take.elements()) * es);
      receives.push_back({peer, incoming.back().data(), incoming.back().size()});
      incoming_rects.push_back(take);
    }
  }
  const Rect own = intersect(mine, need);
  if (own.elements() > 0)
    copy_rect(own, block.data, mine.rows.begin, mine.cols.begin, block.ld, out.data(), need.rows.begin, need.cols.begin,
              need.cols.size(), es);
  comm.exchange_bytes(sends, receives, tag);
  for (std::size_t i = 0; i < incoming.size(); ++i) {
    const Rect& r = incoming_rects[i];
    copy_rect(r, incoming[i].data(), r.rows.begin, r.cols.begin, r.cols.size(), out.data(), need.rows.begin,
              need.cols.begin, need.cols.size(), es);
  }
  return out;
}

// Refuses NaN and Inf in the part of X (`need`, packed in `panel`) this rank multiplies, naming
// the first by X's own (global, stored) row and column.
void refuse_nonfinite(const std::vector<unsigned char>& panel, const DistributedMatrix& x, const Rect& need,
                      const char* name, int rank) {
  if (need.elements() == 0) return;
  // A complex matrix is scanned as the real one of twice its columns that its parts make.
  const int parts = is_complex(x.local.dtype) ? 2 : 1;
  io::NonfiniteCount found;
  found.add(panel.data(), real_of(x.local.dtype), need.rows.size(), parts * need.cols.size(), need.rows.begin,
            parts * need.cols.begin, parts * std::max<std::int64_t>(x.grid.cols, 1));
  if (found.count == 0) return;
  const auto first = static_cast<std::int64_t>(found.first), cols = parts * std::max<std::int64_t>(x.grid.cols, 1);
  throw InputError(
      fmt::format("{} holds {} non-finite value(s) (NaN/Inf){} in what rank {} multiplies ({}), the first at "
                  "({}, {}) of {} as stored; allow_nonfinite multiplies them",
                  name, static_cast<long long>(found.count), parts == 2 ? " in its elements' parts" : "", rank,
                  describe(need), first / cols, first % cols / parts, name));
}

constexpr int kTagA = 4201, kTagB = 4202;

}  // namespace

report::JobReport multiply_distributed(const JobOptions& o, const DistributedMatrix& a, const DistributedMatrix& b,
                                       const DistributedMatrix& c, const comm::Comm& comm) {
  const double started = MPI_Wtime();
  const std::string rank0 = comm.broadcast(agreed_text(o, a, b, c), 0);
  comm.step([&] { check_descriptors(o, a, b, c, comm, rank0); });
  const bool ta = o.a.transposed, tb = o.b.transposed;
  const std::int64_t k = ta ? a.grid.rows : a.grid.cols;
  std::vector<Needs> needs;
  for (int r = 0; r < comm.size(); ++r) needs.push_back(needs_for(owned(c.grid, r), k, ta, tb));
  std::vector<Rect> need_a, need_b;
  for (const Needs& n : needs) need_a.push_back(n.a), need_b.push_back(n.b);
  const Needs& mine = needs[static_cast<std::size_t>(comm.rank())];

  const double exchange_began = MPI_Wtime();
  std::vector<unsigned char> panel_a, panel_b;
  comm.step([&] {
    panel_a = gather_needed(a, mine.a, need_a, comm, kTagA);
    panel_b = gather_needed(b, mine.b, need_b, comm, kTagB);
  });
  const double exchanged = MPI_Wtime() - exchange_began;

  // Every rank's inputs checked before any rank writes its C: a refusal leaves all of C as it was.
  JobOptions local_o = o;
  if (!o.allow_nonfinite) {
    comm.step([&] {
      refuse_nonfinite(panel_a, a, mine.a, "A", comm.rank());
      refuse_nonfinite(panel_b, b, mine.b, "B", comm.rank());
    });
    local_o.allow_nonfinite = true;  // scanned above
  }
  const Rect c_block = owned(c.grid, comm.rank());
  report::JobReport local;  // this rank's product, when it has a block of C
  comm.step([&] {
    if (c_block.elements() == 0) return;
    const DType dtype = a.local.dtype;
    const MemoryMatrix pa{dtype, mine.a.rows.size(), mine.a.cols.size(), mine.a.cols.size(), panel_a.data(), nullptr,
                          false};
    const MemoryMatrix pb{dtype, mine.b.rows.size(), mine.b.cols.size(), mine.b.cols.size(), panel_b.data(), nullptr,
                          false};
    try {
      local = multiply_in_memory(local_o, pa, pb, c.local);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} (in what rank {} multiplies: A's {}, B's {})", e.what(), comm.rank(),
                                   describe(mine.a), describe(mine.b)));
    }
  });
  report::RankRecord me;
  if (!local.ranks.empty()) {
    me = local.ranks.front();
    me.block_row = comm.rank() / c.grid.grid_cols;
    me.block_col = comm.rank() % c.grid.grid_cols;
    me.row_begin = c_block.rows.begin, me.row_end = c_block.rows.end;
    me.col_begin = c_block.cols.begin, me.col_end = c_block.cols.end;
  }
  me.rank = comm.rank();
  me.active = !local.ranks.empty();
  me.phases.insert(me.phases.begin(), {"exchange", exchanged});
  report::JobReport job = job_header(o, comm.size());
  job.backend = local.backend, job.kernel = local.kernel;  // rank 0's are the report's
  job.m = c.grid.rows, job.n = c.grid.cols, job.k = k;
  job.dtype = dtype_name(a.local.dtype);
  const auto where = [](const char* name, const BlockGrid& g) {
    return fmt::format("memory: {} {}x{} over a {}x{} grid of ranks", name, g.rows, g.cols, g.grid_rows, g.grid_cols);
  };
  job.a = where("A", a.grid), job.b = where("B", b.grid), job.c = where("C", c.grid);
  job.grid_rows = c.grid.grid_rows, job.grid_cols = c.grid.grid_cols;
  job.comm = "host";
  job.write = "into each rank's memory";
  gather_records(comm, job, me, started, started, nullptr);
  return job;
}

}  // namespace tessera::job
