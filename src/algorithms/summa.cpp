// summa (van de Geijn & Watts) on a pr x pc grid: rank (i, j) reads only A(i, j) (its block-row's
// rows, the K columns of grid column j) and B(i, j) (the K rows of grid row i, its block-column's
// columns), so each input word is read once and a rank holds O((MK + KN + MN) / P) words. K is
// walked in panels (partition::summa_panels): for each, the ranks holding its A columns broadcast
// them along their grid row and the ranks holding its B rows broadcast them down their grid
// column; every rank adds A_p B_p into its C block, kept on its device. Two panel slots: the next
// panel travels while the current one multiplies.
//
// Large C blocks are computed in row bands (the model chooses how many: each band broadcasts B's
// panels again, and its C is written in place while the next band computes).
//
// Communication (--comm; comm/path.hpp): nccl between GPUs, cuda-aware MPI on device memory, or
// host MPI through page-locked staging; the exchanges are the comm layer's (comm/exchange.hpp).
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "algorithms/algorithm.hpp"
#include "algorithms/band_writer.hpp"
#include "algorithms/gpu_sharing.hpp"
#include "algorithms/summa_model.hpp"
#include "comm/exchange.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {
namespace {

using namespace summa_model;

constexpr int kRoot = 0;
using Panel = backend::PanelProduct::Panel;

// What to do when a GPU has no room for a band's C and two slots of panels.
constexpr const char* kRoomAdvice =
    "use more ranks, a smaller --panel-width, or --algorithm panels (which can run out of core)";

double seconds_since(double start) { return MPI_Wtime() - start; }

// A panel of the product's slot, as the comm layer's exchanges see it.
class SlotPanel final : public comm::PanelSlot {
 public:
  SlotPanel(backend::PanelProduct& product, int slot, Panel which, std::int64_t elements)
      : product_(product), slot_(slot), which_(which), elements_(elements) {}
  void* device() override { return product_.device(slot_, which_); }
  void* host_staging() override { return product_.host(slot_, which_); }
  void upload() override { product_.upload(slot_, which_, elements_); }
  void wait_staged() override { product_.wait_arrived(slot_); }
  void enqueue(const comm::StreamWork& work) override { product_.transfer(slot_, work); }

 private:
  backend::PanelProduct& product_;
  int slot_;
  Panel which_;
  std::int64_t elements_;
};

class Summa final : public Algorithm {
 public:
  std::string name() const override { return "summa"; }

  Share share(const Problem& p, int rank) const override {
    // `auto`: the kernel of one panel's product (the CPU's choice ignores the shape).
    Share s = block_share(p, rank, std::min(p.k, kWidthGpu));
    if (!s.active) return s;
    s.a_rows = s.rows;
    s.a_cols = partition::summa_k_cols(p.k, p.grid.cols, s.block_col);  // A(i, j)'s K columns
    s.b_rows = partition::summa_k_rows(p.k, p.grid.rows, s.block_row);  // B(i, j)'s K rows
    s.b_cols = s.cols;
    s.count_a = s.count_b = true;  // every element of A and of B is read by one rank
    s.zero_c = true;               // the CPU sums into it
    return s;
  }

  RankFootprint rank_footprint(const Problem& p, const Setting& s, const MachineModel& m, int rank) const override {
    return cost(p, s, m, rank, s.bands);
  }

  // Favoured on two ranks or more where the GPUs are joined by NCCL or the grid is 2-D (a
  // broadcast then moves fewer words than panels' whole A rows and B columns), or where a device
  // path was asked for.
  int rule_of_thumb(const Asked& asked, const Problem& p, const Environment& env) const override {
    if (asked.needs_whole_blocks() || p.ranks < 2) return 0;
    const bool nvlink =
        env.nccl_usable(p.ranks) && asked.comm != comm::Path::host && asked.comm != comm::Path::cuda_aware;
    if (p.grid.size() >= 2 && (nvlink || (p.grid.rows > 1 && p.grid.cols > 1))) return 2;
    return asked.comm == comm::Path::nccl || asked.comm == comm::Path::cuda_aware ? 2 : 0;
  }
  // One busy rank has nothing to broadcast.
  bool auto_candidate(const Problem&, const Problem& q) const override { return q.grid.size() > 1; }

  Setting settle(const Asked& asked, const Problem& p, const Environment& env, const MachineModel& m) const override;
  nlohmann::json describe(const Setting& s) const override {
    nlohmann::json j = Algorithm::describe(s);
    j["panel_width"] = s.panel_width;
    return j;
  }

  std::string holds(const Problem& p) const override {
    return "A and B blocks, C block and two panels of a " + p.grid.str() + " summa grid";
  }

  void start(RankRun& run) override;
  void compute(RankRun& run) override;
  void deliver(RankRun& run) override;
  void release() override {
    product_.reset();
    link_.reset();
    broadcast_.reset();
    transport_.reset();
  }

 private:
  void join_exchanges(RankRun& run);
  void multiply_band(RankRun& run, partition::Range band, report::Phases& parts, double& comm_wait);

  double written_seconds_ = 0;    // writing the bands while the next computed
  std::int64_t panels_done_ = 0;  // over the bands, for the progress display
  std::unique_ptr<comm::Comm> row_comm_, col_comm_, active_comm_;
  std::unique_ptr<comm::Transport> transport_;
  std::unique_ptr<comm::GridBroadcast> broadcast_;
  std::unique_ptr<comm::BlockLink> link_;
  std::unique_ptr<backend::PanelProduct> product_;
};

// The options only panels honours are refused; the path is the first of --comm's that every busy
// rank can take (NCCL: no two of them on one GPU); the panel width and the bands follow.
Setting Summa::settle(const Asked& asked, const Problem& p, const Environment& env, const MachineModel& m) const {
  if (asked.verify) throw InputError("--verify needs --algorithm panels (run `tessera verify` after summa)");
  if (!asked.baseline.empty()) throw InputError("--baseline needs --algorithm panels");
  if (asked.gpu_memory > 0)
    throw InputError("--gpu-memory (out of core) needs --algorithm panels: summa keeps its C block on every GPU");
  const Share first = share(p, 0);
  Setting s = common_setting(asked, p, env, first.gemm_m, first.gemm_n, first.gemm_k);
  // Idle ranks compute nothing: a GPU they share does not count against NCCL.
  s.comm = comm::choose_path(asked.comm, s.gpu, env.nccl_usable(p.grid.size()), env.cuda_aware);
  s.alone = p.ranks == 1 || p.grid.size() == 1;
  s.panel_width = panel_width(p, s, asked.panel_width);
  s.bands = choose_bands(p, s, m, asked.bands);
  return s;
}

// The plan holds (the backends it was settled for); ranks on one GPU are reported (the environment
// the plan was settled in kept NCCL from them).
void Summa::start(RankRun& run) {
  const comm::Comm& comm = run.comm;
  const Setting& s = run.setting;
  check_backend(run);
  // Idle ranks compute nothing: a GPU they share does not count against NCCL.
  const std::string shared =
      shared_gpu_note(comm, run.share.active && run.me.device_id >= 0 ? run.me.host + "|" + run.me.device : "");
  if (!shared.empty() && comm.rank() == kRoot)
    run.me.warnings.push_back(shared + " (fewer GPUs than ranks on the node)");
  if (!s.alone && s.comm == comm::Path::nccl) note_nccl_transport(comm, run.be.device_id(), run.job, run.me);
  run.attributes = {io::Attribute::of("comm", s.comm_name()), io::Attribute::of("panel_width", s.panel_width)};
}

// The exchanges of the path: panels along grid rows (position in a row is j) and down grid
// columns (position i; split keeps rank order), C blocks to rank 0 only when they are gathered
// (no link, nor NCCL group, in place).
void Summa::join_exchanges(RankRun& run) {
  const comm::Comm& comm = run.comm;
  const bool active = run.share.active;
  row_comm_ = std::make_unique<comm::Comm>(comm.split(active ? run.share.block_row : -1));
  col_comm_ = std::make_unique<comm::Comm>(comm.split(active ? run.share.block_col : -1));
  active_comm_ = std::make_unique<comm::Comm>(comm.split(active ? 0 : -1));
  comm.step([&] {
    transport_ =
        comm::make_transport(run.setting.comm, run.problem.dtype, {run.be.device_id(), run.be.device_stream()});
  });
  broadcast_ = transport_->grid_broadcast(comm, active ? row_comm_.get() : nullptr, active ? col_comm_.get() : nullptr);
  const bool gathered = active && run.problem.grid.size() > 1 && !run.out.in_place();
  link_ = transport_->block_link(comm, gathered ? active_comm_.get() : nullptr);
  // MPI counts are int: checked here, agreed on by every rank, rather than inside the loop.
  comm.step([&] {
    if (!active || !comm::int_counts(run.setting.comm)) return;
    const Share& s = run.share;
    const auto es = static_cast<std::int64_t>(dtype_size(run.problem.dtype));
    comm::mpi_count(s.rows.size(), "summa: a block's row count");
    comm::mpi_count(s.cols.size(), "summa: a block's column count");
    comm::mpi_count(s.a_cols.size(), "summa: a block's K columns");
    const std::int64_t w = run.setting.panel_width;
    comm::mpi_count(s.rows.size() * w * es, "summa: an A panel's bytes");
    comm::mpi_count(w * s.cols.size() * es, "summa: a B panel's bytes");
  });
}

// C(band, j) += A(band, p) B(p, j) over the K panels p. Not a Comm::step: the loop holds
// collectives of the grid rows and columns, so a rank that fails in it cannot wait for the others
// to agree (they wait in a broadcast). Its error goes to main(), which prints it and aborts the
// whole job (MPI_Abort): no rank is left waiting.
void Summa::multiply_band(RankRun& run, partition::Range band, report::Phases& parts, double& comm_wait) {
  const Share& s = run.share;
  const std::size_t es = dtype_size(run.problem.dtype);
  const std::int64_t rows = band.size(), cols = s.cols.size(), ka = s.a_cols.size();
  const auto* a_bytes = run.a.data() + static_cast<std::size_t>(band.begin * ka) * es;
  const auto* b_bytes = run.b.data();
  const auto panels = partition::summa_panels(run.problem.k, run.problem.grid, run.setting.panel_width);
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const partition::SummaPanel& pan = panels[p];
    const int slot = static_cast<int>(p % backend::PanelProduct::kSlots);
    const std::int64_t w = pan.width;
    const bool own_a = s.block_col == pan.owner_col, own_b = s.block_row == pan.owner_row;
    // Where this rank's own piece of the panel sits in its blocks.
    const unsigned char* a_src = own_a ? a_bytes + static_cast<std::size_t>(pan.begin - s.a_cols.begin) * es : nullptr;
    const unsigned char* b_src =
        own_b ? b_bytes + static_cast<std::size_t>((pan.begin - s.b_rows.begin) * cols) * es : nullptr;
    product_->wait_slot(slot);  // the multiply two panels back has released this slot
    if (own_a) product_->stage(slot, Panel::kA, a_src, ka, rows, w);
    if (own_b) product_->stage(slot, Panel::kB, b_src, cols, w, cols);
    SlotPanel a_slot(*product_, slot, Panel::kA, rows * w), b_slot(*product_, slot, Panel::kB, w * cols);
    const double t = MPI_Wtime();
    broadcast_->broadcast({a_slot, pan.owner_col, rows, w, a_src, ka}, {b_slot, pan.owner_row, w, cols, b_src, cols});
    comm_wait += seconds_since(t);
    product_->multiply(slot, w);
    if (run.work) run.work->advance(++panels_done_);
  }
  for (const auto& ph : product_->finish()) {
    const auto same = std::find_if(parts.begin(), parts.end(), [&](const auto& x) { return x.first == ph.name; });
    if (same == parts.end())
      parts.emplace_back(ph.name, ph.seconds);
    else
      same->second += ph.seconds;
  }
}

void Summa::compute(RankRun& run) {
  join_exchanges(run);
  const Share& s = run.share;
  const int bands = run.setting.bands;
  const std::int64_t width = run.setting.panel_width;
  const std::size_t panels = partition::summa_panels(run.problem.k, run.problem.grid, width).size();
  run.progress(fmt::format("computing C blocks with {}: {} panels of K{}, comm {}", run.kernel, panels,
                           bands > 1 ? fmt::format(" in {} bands of C", bands) : "", run.setting.comm_name()));
  if (run.work) run.work->work(static_cast<std::int64_t>(panels) * bands, "panels of K");
  report::Phases parts;
  double comm_wait = 0;
  const double t_compute = MPI_Wtime();
  const std::size_t es = dtype_size(run.problem.dtype);
  BandWriter writer(run.out.in_place() && s.active ? run.out.sink() : nullptr);
  for (int t = 0; t < bands; ++t) {
    const partition::Range band = partition::split(s.rows.size(), bands, t);
    unsigned char* c_band =
        s.active ? run.c.data() + static_cast<std::size_t>(band.begin * s.cols.size()) * es : nullptr;
    // Agreed on by every rank: a GPU without room for the band's C and two slots of panels.
    run.comm.step([&] {
      if (!s.active) return;
      product_ = with_advice(kRoomAdvice, [&] {
        return run.be.panel_product(run.kernel, run.problem.dtype, band.size(), s.cols.size(), width, c_band,
                                    broadcast_->stages_on_host());
      });
    });
    if (!s.active) continue;
    multiply_band(run, band, parts, comm_wait);
    if (!run.out.in_place()) continue;  // one band: gathered in deliver()
    product_.reset();
    writer.write(s.rows.begin + band.begin, s.cols.begin, band.size(), s.cols.size(), c_band);
  }
  run.comm.step([&] { writer.finish(); });  // the last band's write; a failed write, agreed on
  written_seconds_ = writer.seconds();
  run.c_written = run.out.in_place();
  if (!s.active) return;
  run.me.phases.emplace_back("compute", seconds_since(t_compute));
  for (const auto& p : parts) run.me.phases.push_back(p);
  // Host time spent enqueueing and waiting on panel communication (overlaps the kernels).
  if (run.problem.grid.size() > 1) run.me.phases.emplace_back("comm_wait", comm_wait);
}

void Summa::deliver(RankRun& run) {
  broadcast_.reset();  // the grid's NCCL groups, if any
  if (write_own_block_in_place(run, written_seconds_)) return;
  // Through the path's block link (GPU to GPU with NCCL; a failed device transfer there ends the
  // job, as its peer waits inside NCCL), then written on rank 0 as they arrive.
  const Share& s = run.share;
  const std::int64_t elements = s.rows.size() * s.cols.size();
  const std::size_t es = dtype_size(run.problem.dtype);
  COut::Transport blocks;
  blocks.send = [&] { link_->send({run.c.data(), product_->device_c(), elements}, kRoot); };
  blocks.receive = [&](int r, void* into, std::size_t bytes) {
    link_->receive(r, into, static_cast<std::int64_t>(bytes / es), {run.c.data(), product_->device_c(), elements});
  };
  const Problem& p = run.problem;
  run.out.gather(run.comm, partition::Partition(p.m, p.n, p.k, p.ranks, p.grid), run.c.data(), blocks, false,
                 run.me.phases);
}

}  // namespace

std::unique_ptr<Algorithm> make_summa() { return std::make_unique<Summa>(); }

}  // namespace tessera::algorithms
