// ksplit: the ranks split K instead of C. Rank r reads A[:, K_r] and B[K_r, :]
// (partition::KSplit) and computes partial products of all of C; the partials are summed.
//
// C written in place (the default): C is computed in row bands, and each band's partials are
// summed with a reduce-scatter (NCCL between the GPUs, else MPI_Reduce_scatter_block on the host):
// every rank keeps its own rows of the band and writes them into the output while the next band
// computes. Nothing of C passes through rank 0 that rank 0 did not sum.
// C gathered (--write gather, or ranks that do not share the output's file system): the partials
// are summed onto rank 0 (ncclReduce or MPI_Reduce), which writes all of C.
//
// Why: panels on a 1 x P grid copies all of A to every GPU; for K >= M, N a K split moves each
// input word once and sums C over NVLink.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/band_writer.hpp"
#include "algorithms/gpu_sharing.hpp"
#include "comm/exchange.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {
namespace {

constexpr int kRoot = 0;
// Bands of C from this size of a rank's share of C on; on the host, a band's partial stays this
// small too (MPI's reduce-scatter takes temporary buffers of its size).
constexpr std::int64_t kBandMinBytes = std::int64_t{256} << 20;
constexpr std::int64_t kHostBandBytes = std::int64_t{64} << 20;
constexpr int kMostModelledBands = 16;
// What to do when a GPU has no room for a partial product.
constexpr const char* kRoomAdvice = "use --algorithm panels or a smaller problem";

double seconds_since(double start) { return MPI_Wtime() - start; }

void add_phase(report::Phases& parts, const std::string& name, double seconds) {
  const auto same = std::find_if(parts.begin(), parts.end(), [&](const auto& x) { return x.first == name; });
  if (same == parts.end())
    parts.emplace_back(name, seconds);
  else
    same->second += seconds;
}

// One rank's footprint with C summed by reduce-scatter over `bands` bands.
RankFootprint scattered(const Problem& p, const Setting& s, const MachineModel& m, int rank, int bands) {
  RankFootprint f;
  const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
  const partition::KSplit ks(p.m, p.n, p.k, p.ranks);
  const std::int64_t kr = ks.k_range(rank).size();
  const partition::ScatterBands b(p.m, p.ranks, bands);
  const std::int64_t band_c = b.rows() * p.n * es, own_a = p.m * kr * es, own_b = kr * p.n * es;
  const bool nccl = s.nccl() && p.ranks > 1;
  f.rows = p.m;
  f.cols = p.n;
  // The slices, the rank's pieces of every band, a padded copy of the last band's A rows and, on the host,
  // a band's partial and the temporary buffer MPI sums it in.
  const bool padded = b.band(bands - 1).end > p.m;
  f.host_bytes =
      own_a + own_b + bands * b.piece() * p.n * es + (padded ? b.rows() * kr * es : 0) + (nccl ? 0 : 2 * band_c);
  f.gpu_bytes = backend::device_bytes(
      s.backend(), {backend::DeviceUse::kept_product, s.kernel, p.dtype, b.rows(), p.n, kr});  // a band's product
  f.nccl_groups = nccl ? 1 : 0;
  f.groups_join_while_reading = true;
  f.host_bytes += f.nccl_groups * m.nccl_host_bytes_per_comm;
  f.gpu_bytes += f.nccl_groups * m.nccl_gpu_bytes_per_comm;
  f.read_bytes = own_a + own_b;
  f.send_bytes = f.recv_bytes = p.ranks > 1 ? bands * band_c * (p.ranks - 1) / p.ranks : 0;
  for (int t = 0; t < bands; ++t) f.write_bytes += b.mine(t, rank).size() * p.n * es;
  const double compute = 2.0 * static_cast<double>(bands * b.rows()) * static_cast<double>(p.n) *
                         static_cast<double>(kr) / m.flops(s.gpu, p.dtype);
  const double sum = static_cast<double>(f.send_bytes) / (nccl ? m.device_link_bytes_per_s : m.network_bytes_per_s);
  // Every band uploads its A rows and all of B again, and copies its piece down.
  const double copies = s.gpu ? static_cast<double>(own_a + bands * own_b) / m.h2d_bytes_per_s +
                                    static_cast<double>(f.write_bytes) / m.d2h_bytes_per_s
                              : 0;
  f.read_seconds = static_cast<double>(f.read_bytes) / m.read_bytes_per_s;
  f.compute_seconds = compute + sum + copies;
  const double write = static_cast<double>(f.write_bytes) / m.write_bytes_per_s;
  f.write_seconds = bands > 1 ? std::max(write / bands, write - f.compute_seconds * (bands - 1) / bands) : write;
  return f;
}

// One rank's footprint with the partials summed onto rank 0, which writes all of C.
RankFootprint to_root(const Problem& p, const Setting& s, const MachineModel& m, int rank) {
  RankFootprint f;
  const auto es = static_cast<std::int64_t>(dtype_size(p.dtype));
  const partition::KSplit ks(p.m, p.n, p.k, p.ranks);
  const std::int64_t kr = ks.k_range(rank).size();
  const std::int64_t own = (p.m * kr + kr * p.n) * es, c = p.m * p.n * es;
  const bool nccl = s.nccl() && p.ranks > 1;
  f.rows = p.m;
  f.cols = p.n;
  // Summing on the host: every rank holds its partial C, and MPI_Reduce takes a receive buffer of
  // one piece on the ranks that combine.
  f.host_bytes =
      own +
      (nccl ? (rank == kRoot ? c : 0)
            : c + (p.ranks > 1 ? std::min<std::int64_t>(c, static_cast<std::int64_t>(comm::kReducePieceBytes)) : 0));
  f.gpu_bytes = backend::device_bytes(s.backend(), {backend::DeviceUse::kept_product, s.kernel, p.dtype, p.m, p.n, kr});
  f.nccl_groups = nccl ? 1 : 0;
  f.groups_join_while_reading = true;
  f.host_bytes += f.nccl_groups * m.nccl_host_bytes_per_comm;
  f.gpu_bytes += f.nccl_groups * m.nccl_gpu_bytes_per_comm;
  f.read_bytes = own;
  f.send_bytes = p.ranks > 1 && rank != kRoot ? c : 0;
  f.write_bytes = rank == kRoot ? c : 0;
  const double compute = ks.flops(rank) / m.flops(s.gpu, p.dtype);
  const double reduce =
      p.ranks > 1 ? static_cast<double>(c) / (nccl ? m.device_link_bytes_per_s : m.network_bytes_per_s) : 0;
  const double copies =
      s.gpu ? static_cast<double>(own) / m.h2d_bytes_per_s + static_cast<double>(c) / m.d2h_bytes_per_s : 0;
  f.read_seconds = static_cast<double>(own) / m.read_bytes_per_s;
  f.compute_seconds = copies + compute + reduce;
  f.write_seconds = static_cast<double>(f.write_bytes) / m.write_bytes_per_s;
  return f;
}

// Bands of the reduce-scatter: at least enough that a rank's piece is an MPI count and, on the
// host, that a band stays kHostBandBytes; more where the model predicts a shorter run (each band
// uploads B again) once a rank's share of C reaches kBandMinBytes. A count `asked`
// (TESSERA_BANDS) is only held to what the bands can be.
int choose_bands(const Problem& p, const Setting& s, const MachineModel& m, int asked) {
  const auto usable = [&](int b) {  // every band holds rows of C, and every rank's piece at least one
    return b <= std::max<std::int64_t>(1, p.m / p.ranks) &&
           partition::ScatterBands(p.m, p.ranks, b).band(b - 1).begin < p.m;
  };
  if (asked > 0) {
    int b = asked;
    while (b > 1 && !usable(b)) --b;
    return b;
  }
  const std::int64_t c = p.c_bytes();
  const auto per_rank = c / p.ranks;
  int fewest = 1;
  const std::int64_t piece_elements = p.m * p.n / p.ranks + p.n;
  while (piece_elements / fewest > INT_MAX / 2) fewest *= 2;
  if (!s.nccl())
    fewest = static_cast<int>(
        std::min<std::int64_t>(INT_MAX, std::max<std::int64_t>(fewest, (c + kHostBandBytes - 1) / kHostBandBytes)));
  while (fewest > 1 && !usable(fewest)) --fewest;
  if (per_rank < kBandMinBytes) return fewest;
  return fastest_bands(
      fewest, std::max(kMostModelledBands, fewest), [&](int b) { return scattered(p, s, m, 0, b).seconds(); }, usable);
}

// A rank's partial C as the comm layer's sums see it: host memory, or the backend's device copy.
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

class KSplitAlgorithm final : public Algorithm {
 public:
  std::string name() const override { return "ksplit"; }
  partition::GridShape grid(const Problem&) const override { return {1, 1}; }
  int busy_ranks(const Problem& p) const override { return p.ranks; }
  bool gathers_blocks() const override { return false; }

  // Every rank holds a partial of all of C; a rank with an empty K range (K < ranks) holds zeros.
  Share share(const Problem& p, int rank) const override {
    const partition::KSplit ks(p.m, p.n, p.k, p.ranks);
    Share s;
    s.active = true;
    s.block_row = s.block_col = 0;
    s.rows = {0, p.m};
    s.cols = {0, p.n};
    s.flops = ks.flops(rank) * real_work(p.dtype);
    s.gemm_m = p.m;  // `auto`: the backend's choice for the largest partial product
    s.gemm_n = p.n;
    s.gemm_k = ks.k_range(0).size();
    s.a_rows = {0, p.m};
    s.a_cols = ks.k_range(rank);
    s.b_rows = ks.k_range(rank);
    s.b_cols = {0, p.n};
    s.count_a = s.count_b = true;  // every element sits in exactly one rank's slices
    return s;
  }

  RankFootprint rank_footprint(const Problem& p, const Setting& s, const MachineModel& m, int rank) const override {
    return s.in_place_write ? scattered(p, s, m, rank, s.bands) : to_root(p, s, m, rank);
  }

  // Favoured first on two GPUs or more joined by NCCL where the P partial products are no bigger
  // than the inputs (P M N <= (M + N) K): each input word moves once, C is summed over NVLink.
  int rule_of_thumb(const Asked& asked, const Problem& p, const Environment& env) const override {
    if (asked.needs_whole_blocks() || p.ranks < 2) return 0;
    const bool nvlink =
        env.nccl_usable(p.ranks) && asked.comm != comm::Path::host && asked.comm != comm::Path::cuda_aware;
    const double partials = static_cast<double>(p.ranks) * static_cast<double>(p.m) * static_cast<double>(p.n);
    const double inputs = static_cast<double>(p.k) * (static_cast<double>(p.m) + static_cast<double>(p.n));
    return nvlink && partials <= inputs ? 3 : 0;
  }
  // It splits K over every rank, whatever the grid: the job's own grid only, and not one rank's.
  bool auto_candidate(const Problem& p, const Problem& q) const override {
    return q.grid == p.grid && q.grid.size() > 1;
  }

  Setting settle(const Asked& asked, const Problem& p, const Environment& env, const MachineModel& m) const override;

  std::string holds(const Problem& p) const override {
    return "A columns, B rows and partial products of C (ksplit over " + std::to_string(p.ranks) + " ranks)";
  }
  std::string memory_advice() const override { return "use --algorithm summa (C split over the ranks) or more nodes"; }

  void start(RankRun& run) override;
  void compute(RankRun& run) override;
  void deliver(RankRun& run) override;
  void release() override {
    scatter_.reset();
    sum_.reset();
    transport_.reset();
    c_ = {};
    pieces_ = {};
  }

 private:
  void compute_bands(RankRun& run, report::Phases& parts);
  void compute_to_root(RankRun& run, report::Phases& parts);

  std::unique_ptr<comm::Transport> transport_;
  std::unique_ptr<comm::SumScatter> scatter_;
  std::unique_ptr<comm::SumToRoot> sum_;
  backend::HostBuffer c_;       // C to root: the partial (every rank on the host), the sum (rank 0)
  backend::HostBuffer pieces_;  // in place: this rank's rows of every band
  double written_seconds_ = 0;
};

// The options only panels or summa honour are refused; the sums are on the devices where NCCL
// can join every rank (not two on one GPU) and --comm does not refuse it.
Setting KSplitAlgorithm::settle(const Asked& asked, const Problem& p, const Environment& env,
                                const MachineModel& m) const {
  if (asked.verify) throw InputError("--verify needs --algorithm panels (run `tessera verify` after ksplit)");
  if (!asked.baseline.empty()) throw InputError("--baseline needs --algorithm panels");
  if (asked.gpu_memory > 0)
    throw InputError("--gpu-memory (out of core) needs --algorithm panels: ksplit keeps all of C on every GPU");
  if (asked.comm == comm::Path::cuda_aware)
    throw InputError("--comm cuda-aware needs --algorithm summa (ksplit sums with NCCL or host MPI)");
  if (asked.panel_width != 0) throw InputError("--panel-width needs --algorithm summa");
  const Share first = share(p, 0);
  Setting s = common_setting(asked, p, env, first.gemm_m, first.gemm_n, first.gemm_k);
  s.comm = comm::choose_reduce_path(asked.comm, env.nccl_usable(p.ranks));
  if (is_complex(p.dtype) && s.comm == comm::Path::nccl) {  // (a product kept on the GPU takes real dtypes)
    if (asked.comm == comm::Path::nccl)
      throw InputError(
          "--comm nccl: ksplit's sum of complex partial products on the GPUs is not done yet; use "
          "--comm host (or auto) or --algorithm panels");
    s.comm = comm::Path::host;  // complex partials are summed on the host
  }
  s.alone = p.ranks == 1;
  s.bands = s.in_place_write ? choose_bands(p, s, m, asked.bands) : 1;
  return s;
}

// The plan holds (the backends and GPUs it was settled for); the sums are set up now: NCCL's group
// joins while the inputs are read (comm/exchange.hpp).
void KSplitAlgorithm::start(RankRun& run) {
  const comm::Comm& comm = run.comm;
  const Setting& s = run.setting;
  check_backend(run);
  if (run.asked.grid)
    run.me.warnings.push_back("--grid " + run.asked.grid->str() + " is ignored by --algorithm ksplit (it splits K)");
  // Ranks on one GPU (same host, same name and PCI bus id): NCCL refuses a group with one GPU
  // twice, so they sum on the host, and the report says they share it.
  const std::string shared = shared_gpu_note(comm, run.me.device_id >= 0 ? run.me.host + "|" + run.me.device : "");
  if (!shared.empty() && comm.rank() == kRoot)
    run.me.warnings.push_back(shared + " (fewer GPUs than ranks); ksplit sums their partial products on the host");
  const bool device_sum = s.comm == comm::Path::nccl;
  if (!s.alone && device_sum) note_nccl_transport(comm, run.be.device_id(), run.job, run.me);
  if (!device_sum && s.gpu && run.asked.comm != comm::Path::host && !is_complex(run.problem.dtype) &&
      comm.rank() == kRoot)
    run.me.warnings.push_back(
        "ksplit: built without NCCL, so partial products are summed on the host with MPI after D2H (correct, slower)");
  run.job.write = run.out.in_place() ? "in place (every rank writes its rows of C, summed by reduce-scatter)"
                                     : run.job.write + "; ksplit sums C onto rank 0";
  comm.step([&] {
    transport_ = comm::make_transport(s.comm, run.problem.dtype, {run.be.device_id(), run.be.device_stream()});
  });
  if (run.out.in_place())
    scatter_ = transport_->sum_scatter(comm);
  else
    sum_ = transport_->sum_to_root(comm);
}

void KSplitAlgorithm::compute(RankRun& run) {
  report::Phases parts;
  const double t = MPI_Wtime();
  if (run.out.in_place()) {
    run.progress("computing partial products with " + run.kernel + " in " + std::to_string(run.setting.bands) +
                 " band(s) of C, each summed over the ranks and written by them");
    compute_bands(run, parts);
  } else {
    run.progress("computing partial products with " + run.kernel + " and summing them on rank 0");
    compute_to_root(run, parts);
  }
  // `compute` covers the products and their sums; its parts are h2d, kernel, reduce and d2h (or
  // the CPU's partial and reduce).
  run.me.phases.emplace_back("compute", seconds_since(t));
  for (const auto& p : parts) run.me.phases.push_back(p);
}

// Band after band: the partial product of the band's rows, its reduce-scatter, this rank's rows
// of it copied down and written while the next band computes. Not a Comm::step: the sums are
// collectives, so a rank that fails here cannot wait for the others to agree; its error goes to
// main(), which ends the whole job (MPI_Abort).
void KSplitAlgorithm::compute_bands(RankRun& run, report::Phases& parts) {
  const Problem& p = run.problem;
  const int rank = run.comm.rank();
  const std::size_t es = dtype_size(p.dtype);
  const partition::Range kr = run.share.a_cols;
  const int count = run.setting.bands;
  const partition::ScatterBands bands(p.m, run.comm.size(), count);
  const std::size_t piece = static_cast<std::size_t>(bands.piece() * p.n);
  backend::HostBuffer partial;  // host path: the band's partial product
  run.comm.step([&] {
    pieces_ = run.be.allocate_host(static_cast<std::size_t>(count) * piece * es);
    if (!scatter_->on_device()) partial = run.be.allocate_host(static_cast<std::size_t>(bands.rows() * p.n) * es);
  });
  // A band that reaches beyond C's last row multiplies a copy of its A rows padded with zero rows.
  backend::HostBuffer padded;
  const auto a_rows_of = [&](partition::Range band) -> const unsigned char* {
    const std::size_t row_bytes = static_cast<std::size_t>(kr.size()) * es;
    if (band.end <= p.m) return run.a.data() + static_cast<std::size_t>(band.begin) * row_bytes;
    if (padded.empty()) padded = run.be.allocate_host(static_cast<std::size_t>(band.size()) * row_bytes);
    if (padded.empty()) return nullptr;  // no K columns: nothing to multiply
    std::memset(padded.data(), 0, padded.size());
    if (band.begin < p.m)
      std::memcpy(padded.data(), run.a.data() + static_cast<std::size_t>(band.begin) * row_bytes,
                  static_cast<std::size_t>(p.m - band.begin) * row_bytes);
    return padded.data();
  };
  BandWriter writer(run.out.sink());
  for (int t = 0; t < count; ++t) {
    const unsigned char* a_band = a_rows_of(bands.band(t));
    unsigned char* mine = pieces_.data() + static_cast<std::size_t>(t) * piece * es;
    const backend::GemmProblem prob{p.dtype, bands.rows(), p.n, kr.size(), a_band, run.b.data(), nullptr};
    if (scatter_->on_device()) {
      std::unique_ptr<backend::DeviceProduct> kept;
      run.comm.step([&] {  // e.g. no room on a GPU: agreed on
        kept = with_advice(kRoomAdvice, [&] { return run.be.gemm_on_device(run.kernel, prob); });
      });
      for (const auto& ph : kept->compute_phases()) add_phase(parts, ph.name, ph.seconds);
      PartialC data(nullptr, kept.get());
      scatter_->sum_scatter(data, piece, nullptr);
      for (const auto& ph : kept->finish_rows(mine, rank * bands.piece(), bands.piece()))
        add_phase(parts, ph.name, ph.seconds);
    } else {
      auto host_prob = prob;
      host_prob.c = partial.data();
      run.comm.step([&] {
        if (kr.size() == 0)
          std::memset(partial.data(), 0, partial.size());  // this rank contributes zeros
        else
          for (const auto& ph : run.be.gemm(run.kernel, host_prob))
            add_phase(parts, ph.name == "compute" ? "partial" : ph.name, ph.seconds);
      });
      PartialC data(partial.data(), nullptr);
      const double t0 = MPI_Wtime();
      scatter_->sum_scatter(data, piece, mine);
      add_phase(parts, "reduce", seconds_since(t0));
    }
    const partition::Range rows = bands.mine(t, rank);
    writer.write(rows.begin, 0, rows.size(), p.n, mine);
  }
  run.c_written = true;
  // The last band's write, agreed on by every rank in deliver().
  run.comm.step([&] { writer.finish(); });
  written_seconds_ = writer.seconds();
}

// The partial product of all of C, summed onto rank 0 (C on rank 0 for the result; on every rank
// when summing on the host; zeros on a rank with an empty K range).
void KSplitAlgorithm::compute_to_root(RankRun& run, report::Phases& parts) {
  const Problem& p = run.problem;
  const comm::Comm& comm = run.comm;
  const partition::Range kr = run.share.a_cols;
  const std::size_t es = dtype_size(p.dtype);
  comm.step([&] {
    if (comm.rank() == kRoot || !sum_->on_device()) {
      c_ = run.be.allocate_host(static_cast<std::size_t>(p.m * p.n) * es);
      std::memset(c_.data(), 0, c_.size());
    }
  });
  const backend::GemmProblem prob{
      p.dtype, p.m, p.n, kr.size(), run.a.data(), run.b.data(), c_.empty() ? nullptr : c_.data()};
  std::unique_ptr<backend::DeviceProduct> kept;  // the partial product, where the sum is on the devices
  comm.step([&] {
    if (sum_->on_device()) {
      kept = with_advice(kRoomAdvice, [&] { return run.be.gemm_on_device(run.kernel, prob); });
      for (const auto& ph : kept->compute_phases()) parts.emplace_back(ph.name, ph.seconds);
      return;
    }
    if (kr.size() == 0) return;  // C stays zero
    for (const auto& ph : run.be.gemm(run.kernel, prob))
      parts.emplace_back(ph.name == "compute" ? "partial" : ph.name, ph.seconds);
  });
  comm.step([&] {
    PartialC partial(c_.empty() ? nullptr : c_.data(), kept.get());
    const double t = MPI_Wtime();
    sum_->sum(partial, static_cast<std::size_t>(p.m * p.n), kRoot);
    if (!kept) {
      parts.emplace_back("reduce", seconds_since(t));
      return;
    }
    for (const auto& ph : kept->finish(comm.rank() == kRoot ? c_.data() : nullptr))
      parts.emplace_back(ph.name, ph.seconds);
    kept.reset();
  });
  if (comm.rank() != kRoot) c_ = {};
}

void KSplitAlgorithm::deliver(RankRun& run) {
  if (run.out.in_place()) {
    run.out.write_own_block(run.comm, 0, 0, 0, 0, nullptr, true, written_seconds_, run.me.phases);
    return;
  }
  // Rank 0 writes C in one piece.
  run.progress("writing C");
  run.comm.step([&] {
    if (run.comm.rank() != kRoot) return;
    const double t = MPI_Wtime();
    run.out.sink()->write_block(0, 0, run.problem.m, run.problem.n, c_.data());
    run.me.phases.emplace_back("write", seconds_since(t));
  });
}

}  // namespace

std::unique_ptr<Algorithm> make_ksplit() { return std::make_unique<KSplitAlgorithm>(); }

}  // namespace tessera::algorithms
