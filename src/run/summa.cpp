#include "run/summa.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"
#include "run/checks.hpp"
#include "run/dryrun.hpp"
#include "run/progress.hpp"
#include "run/result.hpp"

namespace tessera::run {

namespace {

constexpr int kRoot = 0;
using Panel = backend::PanelProduct::Panel;

double seconds_since(double start) { return MPI_Wtime() - start; }

// MPI counts are int: a panel side beyond that cannot be described in one datatype.
int mpi_int(std::int64_t v, const char* what) {
  if (v > INT_MAX)
    throw InputError(std::string("summa: ") + what + " of " + std::to_string(v) +
                     " exceeds MPI's int counts; use more ranks or --algorithm panels");
  return static_cast<int>(v);
}

// A committed MPI datatype, freed with the object.
class Datatype {
 public:
  Datatype() = default;
  explicit Datatype(MPI_Datatype t) : t_(t) { TESSERA_MPI_CHECK(MPI_Type_commit(&t_)); }
  ~Datatype() {
    if (t_ != MPI_DATATYPE_NULL) (void)MPI_Type_free(&t_);
  }
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  MPI_Datatype get() const { return t_; }

 private:
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

// rows x cols elements with a row stride of `ld` (a panel inside a rank's block), as one MPI item.
MPI_Datatype strided(std::int64_t rows, std::int64_t cols, std::int64_t ld, MPI_Datatype elem) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  TESSERA_MPI_CHECK(MPI_Type_vector(mpi_int(rows, "a panel's row count"), mpi_int(cols, "a panel's width"),
                                    mpi_int(ld, "a block's row length"), elem, &t));
  return t;
}

}  // namespace

std::string choose_comm(const std::string& want, bool cuda, bool nccl, bool cuda_aware) {
  if (want == "host") return want;
  if (want == "nccl") {
    if (!cuda) throw InputError("--comm nccl needs the cuda backend");
    if (!nccl)
      throw InputError("--comm nccl is not available: this build has no NCCL, or two ranks share a GPU (NCCL takes "
                       "one rank per GPU); use --comm auto");
    return want;
  }
  if (want == "cuda-aware") {
    if (!cuda) throw InputError("--comm cuda-aware needs the cuda backend");
    if (!cuda_aware)
      throw InputError("--comm cuda-aware: this MPI library does not report CUDA support at run time "
                       "(MPIX_Query_cuda_support); use --comm host or nccl");
    return want;
  }
  if (want != "auto") throw InputError("invalid --comm '" + want + "' (choose: auto, host, cuda-aware, nccl)");
  if (cuda && nccl) return "nccl";
  if (cuda && cuda_aware) return "cuda-aware";
  return "host";
}

void run_summa(const RunOptions& o, const comm::Comm& comm, JobStart start) {
  const int rank = comm.rank();
  const DType dtype = start.dtype;
  const std::size_t esize = dtype_size(dtype);
  const MPI_Datatype elem = dtype == DType::f32 ? MPI_FLOAT : MPI_DOUBLE;
  const partition::Partition part(start.m, start.n, start.k, comm.size(), start.grid);
  const partition::GridShape grid = part.grid();
  const bool active = part.active(rank);
  const int gi = active ? part.block_row(rank) : -1, gj = active ? part.block_col(rank) : -1;
  const partition::Range rows = active ? part.rows_of(rank) : partition::Range{}, cols = active ? part.cols_of(rank) : partition::Range{};
  const partition::Range ka = active ? partition::summa_k_cols(part.k(), grid.cols, gj) : partition::Range{};  // A(i,j)'s K columns
  const partition::Range kb = active ? partition::summa_k_rows(part.k(), grid.rows, gi) : partition::Range{};  // B(i,j)'s K rows
  report::JobReport job = std::move(start.job);
  job.algorithm = "summa";

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
  const bool nccl = shared.empty() && comm.min(be->supports_device_reduce() ? 1.0 : 0.0) > 0;
  const bool cuda_aware = comm.min(comm::mpi_cuda_aware() ? 1.0 : 0.0) > 0;
  std::string path;
  comm.step([&] { path = choose_comm(o.comm, cuda, nccl, cuda_aware); });
  job.comm = comm.size() == 1 || grid.size() == 1 ? "none" : path;
  // Panel width: MPI moves a panel as one item of at most INT_MAX elements (and bytes), so on the
  // MPI paths it is narrowed to fit the largest block (block (0, 0): split() puts the longer
  // ranges first).
  std::int64_t width = std::min(part.k(), o.panel_width > 0 ? o.panel_width : cuda ? kSummaWidthGpu : kSummaWidthCpu);
  if (path != "nccl") {
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
    if (rank == kRoot && grid.size() > 1)
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

  // 3. Row and column communicators: position in a row is j, in a column i (split keeps rank order).
  const comm::Comm row_comm = comm.split(active ? gi : -1);
  const comm::Comm col_comm = comm.split(active ? gj : -1);
  std::unique_ptr<backend::DeviceGroup> row_group, col_group;
  if (path == "nccl") {
    // One NCCL group per grid row and per grid column (of more than one rank), joined rows first
    // on every rank, so the collective inits cannot cross.
    for (auto [line, group, pos, size] : {std::tuple{&row_comm, &row_group, gj, grid.cols},
                                          std::tuple{&col_comm, &col_group, gi, grid.rows}}) {
      std::string id;
      comm.step([&, pos = pos, size = size] {
        if (!active || size < 2 || pos != 0) return;
        const auto bytes = be->new_reduce_group_id();
        id.assign(bytes.begin(), bytes.end());
      });
      if (active && size > 1) id = line->broadcast(id, 0);
      // Not a Comm::step: the group's other members wait inside NCCL's init (comm::abort_job).
      try {
        if (active && size > 1)
          *group = be->join_device_group(std::vector<unsigned char>(id.begin(), id.end()), line->rank(), size);
      } catch (const std::exception& e) {
        comm::abort_job(std::string("joining an NCCL group of the process grid: ") + e.what());
      }
    }
  }

  // The gather of C to rank 0 over the devices too: a group of all active ranks.
  std::unique_ptr<backend::DeviceGroup> all_group;
  const comm::Comm active_comm = comm.split(active ? 0 : -1);
  if (path == "nccl" && grid.size() > 1) {
    std::string id;
    comm.step([&] {
      if (rank != kRoot) return;
      const auto bytes = be->new_reduce_group_id();
      id.assign(bytes.begin(), bytes.end());
    });
    if (active) id = active_comm.broadcast(id, 0);
    try {
      if (active) all_group = be->join_device_group(std::vector<unsigned char>(id.begin(), id.end()), rank, grid.size());
    } catch (const std::exception& e) {
      comm::abort_job(std::string("joining the NCCL group for the gather of C: ") + e.what());
    }
  }

  // 4. The panels: C(i, j) += A(i, p) B(p, j) over the K panels p.
  const auto panels = partition::summa_panels(part.k(), grid, width);
  progress.step(fmt::format("computing C blocks with {}: {} panels of K, comm {}", kernel, panels.size(), job.comm));
  std::unique_ptr<backend::PanelProduct> product;
  comm.step([&] {
    if (active) product = be->panel_product(kernel, dtype, rows.size(), cols.size(), width, c.data(),
                                                 path == "host" && grid.size() > 1);
  });
  report::Phases parts;
  // MPI counts are int: checked here, agreed on by every rank, rather than inside the loop.
  comm.step([&] {
    if (!active || path == "nccl") return;
    mpi_int(rows.size(), "a block's row count");
    mpi_int(cols.size(), "a block's column count");
    mpi_int(ka.size(), "a block's K columns");
    mpi_int(rows.size() * width * static_cast<std::int64_t>(esize), "an A panel's bytes");
    mpi_int(width * cols.size() * static_cast<std::int64_t>(esize), "a B panel's bytes");
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
      const double t = MPI_Wtime();
      if (path == "nccl") {
        if (grid.cols > 1) product->broadcast(s, Panel::kA, a_count, *row_group, pan.owner_col);
        if (grid.rows > 1) product->broadcast(s, Panel::kB, b_count, *col_group, pan.owner_row);
      } else if (path == "cuda-aware") {
        if (own_a || own_b) product->wait_arrived(s);
        if (grid.cols > 1 && a_count > 0)
          TESSERA_MPI_CHECK(MPI_Bcast(product->device(s, Panel::kA), mpi_int(a_count, "an A panel"), elem,
                                      pan.owner_col, row_comm.get()));
        if (grid.rows > 1 && b_count > 0)
          TESSERA_MPI_CHECK(MPI_Bcast(product->device(s, Panel::kB), mpi_int(b_count, "a B panel"), elem,
                                      pan.owner_row, col_comm.get()));
      } else {
        // Host: the owners send straight from their blocks (a strided type for A's columns);
        // the others receive into the slot's page-locked staging and copy it up.
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        std::optional<Datatype> a_type, b_type;
        if (grid.cols > 1 && a_count > 0) {
          a_type.emplace(strided(rows.size(), w, own_a ? ka.size() : w, elem));
          void* at = own_a ? const_cast<unsigned char*>(a_src) : product->host(s, Panel::kA);
          TESSERA_MPI_CHECK(MPI_Ibcast(at, 1, a_type->get(), pan.owner_col, row_comm.get(), &req[0]));
        }
        if (grid.rows > 1 && b_count > 0) {
          b_type.emplace(strided(w, cols.size(), cols.size(), elem));
          void* at = own_b ? const_cast<unsigned char*>(b_src) : product->host(s, Panel::kB);
          TESSERA_MPI_CHECK(MPI_Ibcast(at, 1, b_type->get(), pan.owner_row, col_comm.get(), &req[1]));
        }
        TESSERA_MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        if (!own_a) product->upload(s, Panel::kA, a_count);
        if (!own_b) product->upload(s, Panel::kB, b_count);
      }
      comm_wait += seconds_since(t);
      product->multiply(s, w);
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
  row_group.reset();
  col_group.reset();
  // A and B are freed after the gather, with C: unregistering page-locked memory on another thread
  // stalls this thread's CUDA calls (NCCL's send or receive of C waited ~0.5 s behind it), and
  // freeing it here, before the gather, held up the gather instead (551 ms, docs/scaling-2gpu.md).

  // 5. C blocks to rank 0, written as they arrive (GPU to GPU with NCCL, then one copy down on
  // rank 0); then labelled and committed.
  progress.step("gathering and writing C");
  BlockTransport transport;
  if (all_group) {
    // A failed device transfer leaves its peer waiting inside NCCL: end the job (comm::abort_job).
    transport.send = [&] {
      try {
        product->send_c(*all_group, kRoot);
      } catch (const std::exception& e) {
        comm::abort_job(std::string("sending the C block to rank 0: ") + e.what());
      }
    };
    transport.receive = [&](int r, void* into, std::size_t bytes) {
      try {
        product->receive_c(*all_group, r, static_cast<std::int64_t>(bytes / esize), into);
      } catch (const std::exception& e) {
        comm::abort_job("receiving the C block of rank " + std::to_string(r) + ": " + e.what());
      }
    };
  }
  gather_and_write(comm, part, dtype, c.data(), spare.empty() ? nullptr : spare.data(), start.writer.get(), progress,
                   me.phases, transport);
  double release_s = 0;
  {
    const double t = MPI_Wtime();  // freeing device memory and the NCCL group takes time too
    product.reset();
    all_group.reset();
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
  comm.step([&] {
    if (rank != kRoot) return;
    const double t = MPI_Wtime();
    job.wall_seconds = seconds_since(start.started);
    start.writer->set_attributes(result_attributes(job, grid.str()));
    start.writer->set_attributes({io::Attribute::of("comm", job.comm),
                                  io::Attribute::of("panel_width", std::int64_t{width})});
    start.writer->commit();
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

}  // namespace tessera::run
