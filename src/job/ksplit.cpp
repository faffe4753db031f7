#include "job/ksplit.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "comm/exchange.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "partition/partition.hpp"
#include "job/rank_backend.hpp"
#include "job/rank_report.hpp"
#include "job/refusals.hpp"
#include "job/dryrun.hpp"
#include "job/progress.hpp"
#include "job/result.hpp"

namespace tessera::job {

namespace {

constexpr int kRoot = 0;

double seconds_since(double start) { return MPI_Wtime() - start; }

// A rank's partial C as the comm layer's sum sees it: the host C, or the backend's device copy.
class PartialC final : public comm::ReduceData {
 public:
  PartialC(void* host, backend::DeviceProduct* device) : host_(host), device_(device) {}
  void* host() override { return host_; }
  void* device() override { return device_ ? device_->device_c() : nullptr; }
  void enqueue(const comm::StreamWork& work) override {
    if (!device_) throw Error("ksplit: no partial product on the device to sum");
    device_->transfer("reduce", work);
  }

 private:
  void* host_;
  backend::DeviceProduct* device_;
};

}  // namespace

void run_ksplit(const RunOptions& o, const comm::Comm& comm, JobStart start) {
  const int rank = comm.rank();
  const partition::KSplit ks(start.m, start.n, start.k, comm.size());
  const DType dtype = start.dtype;
  const std::size_t esize = dtype_size(dtype);
  const partition::Range kr = ks.k_range(rank);
  report::JobReport job = std::move(start.job);
  job.algorithm = "ksplit";
  job.write = "by rank 0 (ksplit sums the partial products there)";

  bool show_progress = o.progress == "on";
  if (o.progress == "auto" && rank == kRoot) {
    const bool gpu = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
    const auto grid = partition::choose_grid(ks.m(), ks.n(), ks.k(), comm.size());
    show_progress = plan_run(ks.m(), ks.n(), ks.k(), dtype, comm.size(), grid, gpu, {"ksplit", gpu ? "nccl" : "host", 0})
                        .predicted_seconds > 5;
  }
  Progress progress(rank == kRoot && show_progress);
  progress.step("plan: ksplit, K split over " + std::to_string(comm.size()) + " rank(s), " + dtype_name(dtype));

  // Every rank holds a partial of all of C; a rank with an empty K range (K < ranks) holds zeros.
  report::RankRecord me;
  me.rank = rank;
  me.active = true;
  const auto node = comm.node();
  me.host = node.host;
  me.block_row = 0;
  me.block_col = 0;
  me.row_end = ks.m();
  me.col_end = ks.n();
  me.flops = ks.flops(rank);

  // 1. Backend and kernel. `auto`: the backend's choice for the largest partial product.
  std::unique_ptr<backend::Backend> be;
  std::string kernel;
  comm.step([&] {
    be = make_rank_backend(o.backend, {node.local_rank, node.local_size}, o.kernel, dtype, ks.m(), ks.n(),
                           ks.k_range(0).size(), me, kernel);
  });
  job.backend = comm.broadcast(be->name(), kRoot);
  job.kernel = comm.broadcast(kernel, kRoot);
  if (!o.grid.empty()) me.warnings.push_back("--grid " + o.grid + " is ignored by --algorithm ksplit (it splits K)");
  // Ranks on one GPU (same host, same name and PCI bus id): NCCL refuses a group with one GPU
  // twice, so they sum on the host, and the report says they share it.
  const std::string shared = shared_gpu_note(comm, me.device_id >= 0 ? me.host + "|" + me.device : std::string());
  if (!shared.empty() && rank == kRoot)
    me.warnings.push_back(shared + " (fewer GPUs than ranks); ksplit sums their partial products on the host");
  // Device reduction only when every rank's backend can (one rank without a GPU: all on the host).
  const bool nccl_possible =
      shared.empty() && comm::nccl_compiled() && comm.min(be->name() == "cuda" ? 1.0 : 0.0) > 0;
  comm::Path path = comm::Path::host;
  comm.step([&] { path = comm::choose_reduce_path(o.comm, nccl_possible); });
  const bool device_reduce = path == comm::Path::nccl;
  job.comm = comm.size() == 1 ? "none" : device_reduce ? "nccl" : "host";
  if (job.comm == "nccl") note_nccl_transport(comm, be->device_id(), job, me);
  if (!device_reduce && be->name() == "cuda" && o.comm != "host" && rank == kRoot)
    me.warnings.push_back(
        "ksplit: built without NCCL, so partial products are summed on the host with MPI_Reduce after D2H (correct, "
        "slower)");

  // Host memory, refused up front: every rank's slices, and all of C where it is summed.
  refuse_over_node_memory(
      comm,
      static_cast<double>(ks.a_elements(rank) + ks.b_elements(rank) +
                          (rank == kRoot || !device_reduce ? ks.c_elements() : 0)) *
          static_cast<double>(esize),
      "A columns, B rows" + std::string(rank == kRoot || !device_reduce ? " and all of C" : "") + " (ksplit)",
      "use --algorithm summa (C split over the ranks) or more nodes");

  // 2. Inputs: this rank's K columns of A and K rows of B (nothing when its K range is empty).
  me.phases.emplace_back("setup", seconds_since(start.started));  // plan, output, backend (GPU start-up)
  progress.step("reading A columns and B rows on " + std::to_string(comm.size()) + " rank(s)");
  backend::HostBuffer a, b, c;
  comm.step([&] {
    const double t = MPI_Wtime();
    a = be->allocate_host(static_cast<std::size_t>(ks.a_elements(rank)) * esize);
    b = be->allocate_host(static_cast<std::size_t>(ks.b_elements(rank)) * esize);
    // C: on rank 0 for the result; on every rank when summing on the host. Zeros: the partial of
    // a rank with an empty K range. Allocated (and touched) here, outside the timed compute.
    if (rank == kRoot || !device_reduce) {
      c = be->allocate_host(static_cast<std::size_t>(ks.c_elements()) * esize);
      std::memset(c.data(), 0, c.size());
    }
    if (kr.size() > 0) {
      io::read_block(io::DatasetRef::parse(o.a), 0, ks.m(), kr.begin, kr.size(), dtype, a.data());
      io::read_block(io::DatasetRef::parse(o.b), kr.begin, kr.size(), 0, ks.n(), dtype, b.data());
    }
    me.phases.emplace_back("read", seconds_since(t));
  });

  // Non-finite inputs: every element sits in exactly one rank's slices.
  refuse_nonfinite(comm, o.a, scan_nonfinite(a.data(), dtype, ks.m(), kr.size(), 0, kr.begin, ks.k()), ks.k(), o.b,
                   scan_nonfinite(b.data(), dtype, kr.size(), ks.n(), kr.begin, 0, ks.n()), ks.n(), o.allow_nonfinite);

  // 3. The sum of the path (with NCCL: rank 0 makes the group's id, MPI hands it to everyone, each
  // joins).
  std::unique_ptr<comm::Transport> transport;
  comm.step([&] { transport = comm::make_transport(path, dtype, {be->device_id(), be->device_stream()}); });
  const auto sum = transport->sum_to_root(comm);

  // 4. Partial product, then the sum onto rank 0. `compute` covers both (compute and
  // communication); its parts are h2d, kernel, reduce and d2h (or the CPU's compute and reduce).
  progress.step("computing partial products with " + kernel + " and summing them on rank 0");
  const backend::GemmProblem prob{dtype, ks.m(), ks.n(), kr.size(), a.data(), b.data(), c.empty() ? nullptr : c.data()};
  report::Phases parts;
  const double t_compute = MPI_Wtime();
  std::unique_ptr<backend::DeviceProduct> kept;  // the partial product, where the sum is on the devices
  comm.step([&] {
    if (sum->on_device()) {
      kept = be->gemm_on_device(kernel, prob);
      for (const auto& p : kept->compute_phases()) parts.emplace_back(p.name, p.seconds);
      return;
    }
    if (kr.size() == 0) return;  // C stays zero
    for (const auto& p : be->gemm(kernel, prob))
      parts.emplace_back(p.name == "compute" ? "partial" : p.name, p.seconds);
  });
  comm.step([&] {
    PartialC partial(c.empty() ? nullptr : c.data(), kept.get());
    const double t = MPI_Wtime();
    sum->sum(partial, static_cast<std::size_t>(ks.c_elements()), kRoot);
    if (!kept) {
      parts.emplace_back("reduce", seconds_since(t));
      return;
    }
    for (const auto& p : kept->finish(rank == kRoot ? c.data() : nullptr)) parts.emplace_back(p.name, p.seconds);
    kept.reset();
  });
  me.phases.emplace_back("compute", seconds_since(t_compute));
  for (const auto& p : parts) me.phases.push_back(p);
  // The inputs (and the partials of the other ranks) are freed beside rank 0's write: unregistering
  // page-locked memory takes time.
  BackgroundRelease releasing(be.get(), [&] {
    a = {};
    b = {};
    if (rank != kRoot) c = {};
  });

  // 5. Rank 0 writes C in one piece, labels it and commits: only now does the output appear.
  progress.step("writing C");
  job.m = ks.m();
  job.n = ks.n();
  job.k = ks.k();
  job.dtype = dtype_name(dtype);
  job.grid_rows = 1;
  job.grid_cols = 1;
  comm.step([&] {
    if (rank != kRoot) return;
    const double t = MPI_Wtime();
    start.writer->write_block(0, 0, ks.m(), ks.n(), c.data());
    job.wall_seconds = seconds_since(start.started);
    start.writer->set_attributes(result_attributes(job, "1x1x" + std::to_string(comm.size())));
    commit_result(o, *start.writer, job, start.writer->nonfinite_written());
    start.writer.reset();
    me.phases.emplace_back("write", seconds_since(t));
  });
  double release_s = releasing.wait();
  {
    const double t = MPI_Wtime();
    c = {};
    release_s += seconds_since(t);
  }
  me.phases.emplace_back("release", release_s);

  progress.finish();
  // 6. Report: rank 0 collects every rank's record.
  publish_report(o, comm, job, std::move(me), start.started, be.get());
}

}  // namespace tessera::job
