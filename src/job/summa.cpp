#include "job/summa.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "comm/exchange.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"
#include "job/rank_backend.hpp"
#include "job/rank_report.hpp"
#include "job/refusals.hpp"
#include "job/dryrun.hpp"
#include "job/output.hpp"
#include "job/progress.hpp"
#include "job/result.hpp"

namespace tessera::job {

namespace {

constexpr int kRoot = 0;
using Panel = backend::PanelProduct::Panel;

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

}  // namespace

void run_summa(const RunOptions& o, const comm::Comm& comm, JobStart start) {
  const int rank = comm.rank();
  const DType dtype = start.dtype;
  const std::size_t esize = dtype_size(dtype);
  const partition::Partition part(start.m, start.n, start.k, comm.size(), start.grid);
  const partition::GridShape grid = part.grid();
  const bool active = part.active(rank);
  const int gi = active ? part.block_row(rank) : -1, gj = active ? part.block_col(rank) : -1;
  const partition::Range rows = active ? part.rows_of(rank) : partition::Range{}, cols = active ? part.cols_of(rank) : partition::Range{};
  const partition::Range ka = active ? partition::summa_k_cols(part.k(), grid.cols, gj) : partition::Range{};  // A(i,j)'s K columns
  const partition::Range kb = active ? partition::summa_k_rows(part.k(), grid.rows, gi) : partition::Range{};  // B(i,j)'s K rows
  report::JobReport job = std::move(start.job);
  job.algorithm = "summa";
  // Every rank writes its own C block into the output, or rank 0 gathers them (job/output.hpp).
  const OutputRoute route = OutputRoute::choose(comm, start.writer.get(), o.write, active);
  job.write = route.description();

  const bool gpu_wanted = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
  bool show_progress = o.progress == "on";
  if (o.progress == "auto" && rank == kRoot)
    show_progress = plan_run(part.m(), part.n(), part.k(), dtype, comm.size(), grid, gpu_wanted,
                             {"summa", gpu_wanted ? "nccl" : "host", o.panel_width})
                        .predicted_seconds > 5;
  Progress progress(rank == kRoot && show_progress);
  progress.step("plan: summa on a " + grid.str() + " grid, " + dtype_name(dtype));

  report::RankRecord me;
  me.rank = rank;
  me.active = active;
  const auto node = comm.node();
  me.host = node.host;
  if (active) describe_block(part, rank, me);

  // 1. Backend and kernel; the panel width and the communication path, the same on every rank
  // (the panels and their broadcasts must match): decided from values all ranks agree on.
  std::unique_ptr<backend::Backend> be;
  std::string kernel;
  comm.step([&] {
    const int who = active ? rank : 0;
    be = make_rank_backend(o.backend, {node.local_rank, node.local_size}, o.kernel, dtype, part.rows_of(who).size(),
                           part.cols_of(who).size(), std::min(part.k(), gpu_wanted ? kSummaWidthGpu : kSummaWidthCpu),
                           me, kernel);
  });
  job.backend = comm.broadcast(be->name(), kRoot);
  job.kernel = comm.broadcast(kernel, kRoot);
  const bool cuda = comm.min(be->name() == "cuda" ? 1.0 : 0.0) > 0;
  comm.step([&] {
    if (comm.max(be->name() == "cuda" ? 1.0 : 0.0) > 0 && !cuda)
      throw InputError("summa needs the same backend on every rank, but some ranks have a GPU and some do not; pass "
                       "--backend cpu, or run one rank per GPU");
  });
  // Idle ranks compute nothing: a GPU they share does not count against NCCL.
  const std::string shared =
      shared_gpu_note(comm, active && me.device_id >= 0 ? me.host + "|" + me.device : std::string());
  if (!shared.empty() && rank == kRoot) me.warnings.push_back(shared + " (fewer GPUs than ranks on the node)");
  const bool nccl = shared.empty() && cuda && comm::nccl_compiled();
  const bool cuda_aware = comm.min(comm::mpi_cuda_aware() ? 1.0 : 0.0) > 0;
  comm::Path path = comm::Path::host;
  comm.step([&] { path = comm::choose_path(o.comm, cuda, nccl, cuda_aware); });
  job.comm = comm.size() == 1 || grid.size() == 1 ? "none" : comm::path_name(path);
  if (job.comm == "nccl") note_nccl_transport(comm, be->device_id(), job, me);
  // Panel width: MPI moves a panel as one item of at most INT_MAX elements (and bytes), so on the
  // MPI paths it is narrowed to fit the largest block (block (0, 0): split() puts the longer
  // ranges first).
  std::int64_t width = std::min(part.k(), o.panel_width > 0 ? o.panel_width : cuda ? kSummaWidthGpu : kSummaWidthCpu);
  if (comm::int_counts(path)) {
    const std::int64_t side = std::max(part.rows_of(0).size(), part.cols_of(0).size());
    width = std::max<std::int64_t>(1, std::min<std::int64_t>(width, INT_MAX / (side * static_cast<std::int64_t>(esize))));
  }

  // Host memory, refused up front: what the ranks of each node hold against the node's memory.
  {
    const double need = static_cast<double>(rows.size() * ka.size() + kb.size() * cols.size() +
                                            rows.size() * cols.size() * (cuda ? 1 : 2) +
                                            backend::PanelProduct::kSlots * (rows.size() + cols.size()) * width) *
                        static_cast<double>(esize);
    refuse_over_node_memory(comm, need, "A and B blocks, C block and two panels of a " + grid.str() + " summa grid");
  }

  // 2. Inputs: A(i, j) and B(i, j) only; every element of A and of B is read by one rank.
  me.phases.emplace_back("setup", seconds_since(start.started));  // plan, output, backend (GPU start-up)
  progress.step("reading A and B blocks on " + std::to_string(grid.size()) + " rank(s)");
  backend::HostBuffer a, b, c, spare;  // spare: rank 0's second gather buffer (handover.hpp)
  comm.step([&] {
    if (!active) return;
    const double t = MPI_Wtime();
    if (rank == kRoot && grid.size() > 1 && !route.in_place())
      spare = be->allocate_host(static_cast<std::size_t>(gather_spare_elements(part)) * esize);
    a = be->allocate_host(static_cast<std::size_t>(rows.size() * ka.size()) * esize);
    b = be->allocate_host(static_cast<std::size_t>(kb.size() * cols.size()) * esize);
    c = be->allocate_host(static_cast<std::size_t>(rows.size() * cols.size()) * esize);
    std::memset(c.data(), 0, c.size());  // the CPU sums into it
    if (ka.size() > 0) io::read_block(io::DatasetRef::parse(o.a), rows.begin, rows.size(), ka.begin, ka.size(), dtype, a.data());
    if (kb.size() > 0) io::read_block(io::DatasetRef::parse(o.b), kb.begin, kb.size(), cols.begin, cols.size(), dtype, b.data());
    me.phases.emplace_back("read", seconds_since(t));
  });
  refuse_nonfinite(comm, o.a, scan_nonfinite(a.data(), dtype, rows.size(), ka.size(), rows.begin, ka.begin, part.k()),
                   part.k(), o.b, scan_nonfinite(b.data(), dtype, kb.size(), cols.size(), kb.begin, cols.begin, part.n()),
                   part.n(), o.allow_nonfinite);

  // 3. The exchanges of the path: panels along grid rows (position in a row is j) and down grid
  // columns (position i; split keeps rank order), C blocks from the active ranks to rank 0.
  const comm::Comm row_comm = comm.split(active ? gi : -1);
  const comm::Comm col_comm = comm.split(active ? gj : -1);
  const comm::Comm active_comm = comm.split(active ? 0 : -1);
  std::unique_ptr<comm::Transport> transport;
  comm.step([&] { transport = comm::make_transport(path, dtype, {be->device_id(), be->device_stream()}); });
  auto broadcast = transport->grid_broadcast(comm, active ? &row_comm : nullptr, active ? &col_comm : nullptr);
  // C blocks travel to rank 0 only when they are gathered (no link, nor NCCL group, in place).
  auto link = transport->block_link(comm, active && grid.size() > 1 && !route.in_place() ? &active_comm : nullptr);

  // 4. The panels: C(i, j) += A(i, p) B(p, j) over the K panels p.
  const auto panels = partition::summa_panels(part.k(), grid, width);
  progress.step(fmt::format("computing C blocks with {}: {} panels of K, comm {}", kernel, panels.size(), job.comm));
  progress.work(static_cast<std::int64_t>(panels.size()), "panels of K");
  std::unique_ptr<backend::PanelProduct> product;
  comm.step([&] {
    if (active)
      product =
          be->panel_product(kernel, dtype, rows.size(), cols.size(), width, c.data(), broadcast->stages_on_host());
  });
  report::Phases parts;
  // MPI counts are int: checked here, agreed on by every rank, rather than inside the loop.
  comm.step([&] {
    if (!active || !comm::int_counts(path)) return;
    comm::mpi_count(rows.size(), "summa: a block's row count");
    comm::mpi_count(cols.size(), "summa: a block's column count");
    comm::mpi_count(ka.size(), "summa: a block's K columns");
    comm::mpi_count(rows.size() * width * static_cast<std::int64_t>(esize), "summa: an A panel's bytes");
    comm::mpi_count(width * cols.size() * static_cast<std::int64_t>(esize), "summa: a B panel's bytes");
  });
  const double t_compute = MPI_Wtime();
  double comm_wait = 0;
  // Not a Comm::step: the loop holds collectives of the grid rows and columns, so a rank that
  // fails in it cannot wait for the others to agree (they wait in a broadcast). Its error goes
  // to main(), which prints it and aborts the whole job (MPI_Abort): no rank is left waiting.
  const auto multiply_panels = [&] {
    const auto* a_bytes = a.data();
    const auto* b_bytes = b.data();
    for (std::size_t p = 0; p < panels.size(); ++p) {
      const partition::SummaPanel& pan = panels[p];
      const int s = static_cast<int>(p % backend::PanelProduct::kSlots);
      const std::int64_t w = pan.width;
      const bool own_a = gj == pan.owner_col, own_b = gi == pan.owner_row;
      // Where this rank's own piece of the panel sits in its blocks.
      const unsigned char* a_src = own_a ? a_bytes + static_cast<std::size_t>(pan.begin - ka.begin) * esize : nullptr;
      const unsigned char* b_src =
          own_b ? b_bytes + static_cast<std::size_t>((pan.begin - kb.begin) * cols.size()) * esize : nullptr;
      const std::int64_t a_count = rows.size() * w, b_count = w * cols.size();
      product->wait_slot(s);  // the multiply two panels back has released this slot
      if (own_a) product->stage(s, Panel::kA, a_src, ka.size(), rows.size(), w);
      if (own_b) product->stage(s, Panel::kB, b_src, cols.size(), w, cols.size());
      SlotPanel a_slot(*product, s, Panel::kA, a_count), b_slot(*product, s, Panel::kB, b_count);
      const double t = MPI_Wtime();
      broadcast->broadcast({a_slot, pan.owner_col, rows.size(), w, a_src, ka.size()},
                           {b_slot, pan.owner_row, w, cols.size(), b_src, cols.size()});
      comm_wait += seconds_since(t);
      product->multiply(s, w);
      progress.advance(static_cast<std::int64_t>(p) + 1);
    }
    for (const auto& ph : product->finish()) parts.emplace_back(ph.name, ph.seconds);
  };
  if (active) multiply_panels();
  if (active) {
    me.phases.emplace_back("compute", seconds_since(t_compute));
    for (const auto& p : parts) me.phases.push_back(p);
    // Host time spent enqueueing and waiting on panel communication (overlaps the kernels).
    if (grid.size() > 1) me.phases.emplace_back("comm_wait", comm_wait);
  }
  broadcast.reset();  // the grid's NCCL groups, if any
  // A and B are freed after the gather, with C: unregistering page-locked memory on another thread
  // stalls this thread's CUDA calls (NCCL's send or receive of C waited ~0.5 s behind it), and
  // freeing it here, before the gather, held up the gather instead (551 ms, docs/scaling-2gpu.md).

  // 5. C to the file: every rank writes its own block (in place), or the blocks go to rank 0 and are
  // written as they arrive (GPU to GPU with NCCL, then one copy down on rank 0); then labelled
  // and committed.
  progress.step(route.in_place() ? "writing C blocks on every rank" : "gathering and writing C");
  // Through the path's block link (GPU to GPU with NCCL; a failed device transfer there ends the
  // job, as its peer waits inside NCCL).
  BlockTransport blocks;
  blocks.send = [&] { link->send({c.data(), product->device_c(), rows.size() * cols.size()}, kRoot); };
  blocks.receive = [&](int r, void* into, std::size_t bytes) {
    link->receive(r, into, static_cast<std::int64_t>(bytes / esize),
                  {c.data(), product->device_c(), rows.size() * cols.size()});
  };
  if (route.in_place())
    route.write_own_block(comm, rows.begin, cols.begin, rows.size(), cols.size(), c.data(), false, me.phases);
  else
    gather_and_write(comm, part, dtype, c.data(), spare.empty() ? nullptr : spare.data(), start.writer.get(), progress,
                     me.phases, blocks);
  double release_s = 0;
  {
    const double t = MPI_Wtime();  // freeing device memory and the NCCL group takes time too
    product.reset();
    link.reset();
    release_s += seconds_since(t);
  }
  // The page-locked buffers: freed beside rank 0's commit, which mostly waits for the disk.
  BackgroundRelease releasing(be.get(), [&] {
    a = {};
    b = {};
    c = {};
    spare = {};
  });
  job.m = part.m();
  job.n = part.n();
  job.k = part.k();
  job.dtype = dtype_name(dtype);
  job.grid_rows = grid.rows;
  job.grid_cols = grid.cols;
  const io::NonfiniteCount c_nonfinite = route.nonfinite_written(comm);  // of every rank's writes
  comm.step([&] {
    if (rank != kRoot) return;
    const double t = MPI_Wtime();
    job.wall_seconds = seconds_since(start.started);
    start.writer->set_attributes(result_attributes(job, grid.str()));
    start.writer->set_attributes({io::Attribute::of("comm", job.comm),
                                  io::Attribute::of("panel_width", std::int64_t{width})});
    commit_result(o, *start.writer, job, c_nonfinite);
    start.writer.reset();
    for (auto& p : me.phases)
      if (p.first == "write") p.second += seconds_since(t);
  });
  release_s += releasing.wait();
  if (active) me.phases.emplace_back("release", release_s);

  progress.finish();
  // 6. Report: rank 0 collects every rank's record.
  publish_report(o, comm, job, std::move(me), start.started, be.get());
}

}  // namespace tessera::job
