#include "run/handover.hpp"

#include "comm/peers.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "run/checks.hpp"

namespace tessera::run {

namespace {
constexpr int kRoot = 0;
constexpr int kTagBlock = 101;
}  // namespace

void describe_block(const partition::Partition& part, int rank, report::RankRecord& me) {
  me.block_row = part.block_row(rank);
  me.block_col = part.block_col(rank);
  const auto rows = part.rows_of(rank), cols = part.cols_of(rank);
  me.row_begin = rows.begin;
  me.row_end = rows.end;
  me.col_begin = cols.begin;
  me.col_end = cols.end;
  me.flops = part.flops(rank);
}

void publish_report(const RunOptions& o, const comm::Comm& comm, report::JobReport& job, report::RankRecord me,
                    double started, const backend::Backend* be, const std::function<void()>& after_table) {
  me.peak_host_bytes = peak_rss_bytes();
  if (const double since = seconds_since_process_start(); since >= 0)
    me.startup_seconds = std::max(0.0, since - (MPI_Wtime() - started));
  if (be) me.peak_gpu_bytes = be->peak_device_bytes();
  const auto records = comm.gather(report::to_json(me).dump(), kRoot);
  job.wall_seconds = comm.max(MPI_Wtime() - started);
  comm.step([&] {
    if (comm.rank() != kRoot) return;
    for (const auto& text : records) job.ranks.push_back(report::rank_from_json(nlohmann::json::parse(text)));
    if (!o.quiet) std::fputs(report::format_table(job).c_str(), stdout);
    if (after_table) after_table();
    std::fflush(stdout);
    // Into the temporary reserved up front (reserve_report), then renamed into place.
    if (!o.report.empty()) io::write_file_replacing(o.report, report::to_json(job).dump(2) + "\n");
  });
}

void note_nccl_transport(const comm::Comm& comm, int device, report::JobReport& job, report::RankRecord& me) {
  const comm::PeerSurvey peers = comm::survey_peers(comm, device);
  job.nccl_transport = peers.transport;
  if (comm.rank() == kRoot) me.warnings.insert(me.warnings.end(), peers.warnings.begin(), peers.warnings.end());
}

std::string choose_algorithm(const RunOptions& o, bool cuda, bool nccl, int nranks, std::int64_t m, std::int64_t n,
                             std::int64_t k, partition::GridShape grid) {
  const std::string& want = o.algorithm;
  if (want != "auto" && want != "panels" && want != "summa" && want != "ksplit")
    throw InputError("invalid --algorithm '" + want + "' (choose: auto, panels, summa, ksplit)");
  if (want != "auto" && want != "panels") {
    if (o.verify) throw InputError("--verify needs --algorithm panels (run `tessera verify` after " + want + ")");
    if (!o.baseline.empty()) throw InputError("--baseline needs --algorithm panels");
    if (!o.gpu_memory.empty())
      throw InputError("--gpu-memory (out of core) needs --algorithm panels: " + want + " keeps " +
                       (want == "ksplit" ? "all of C" : "its C block") + " on every GPU");
  }
  if (o.comm != "auto" && o.comm != "host" && o.comm != "cuda-aware" && o.comm != "nccl")
    throw InputError("invalid --comm '" + o.comm + "' (choose: auto, host, cuda-aware, nccl)");
  const std::string chosen = [&] {
    if (want != "auto") return want;
    const bool plain = !o.verify && o.baseline.empty() && o.gpu_memory.empty();
    if (!plain || nranks < 2) return std::string("panels");
    const bool nvlink = cuda && nccl && o.comm != "host" && o.comm != "cuda-aware";
    // P partial products of all of C, summed: worth it while they are no bigger than the inputs.
    const double partials = static_cast<double>(nranks) * static_cast<double>(m) * static_cast<double>(n);
    const double inputs = static_cast<double>(k) * (static_cast<double>(m) + static_cast<double>(n));
    if (nvlink && partials <= inputs) return std::string("ksplit");
    if (grid.size() >= 2 && (nvlink || (grid.rows > 1 && grid.cols > 1))) return std::string("summa");
    if (o.comm == "nccl" || o.comm == "cuda-aware") return std::string("summa");  // asked for a device path
    return std::string("panels");
  }();
  if (chosen == "panels" && o.comm != "auto" && o.comm != "host")
    throw InputError("--comm " + o.comm + " needs --algorithm summa or ksplit (panels gathers C through host MPI)");
  if (chosen == "ksplit" && o.comm == "cuda-aware")
    throw InputError("--comm cuda-aware needs --algorithm summa (ksplit sums with NCCL or host MPI)");
  if (chosen != "summa" && o.panel_width != 0) throw InputError("--panel-width needs --algorithm summa");
  if (o.panel_width < 0) throw InputError("--panel-width must be >= 1 (or 0: chosen)");
  return chosen;
}

void gather_and_write(const comm::Comm& comm, const partition::Partition& part, DType dtype, void* c_block, void* spare,
                      io::MatrixWriter* writer, Progress& progress, report::Phases& phases,
                      const BlockTransport& transport, bool root_written) {
  const int rank = comm.rank();
  const std::size_t esize = dtype_size(dtype);
  comm.step([&] {
    const double t = MPI_Wtime();
    if (rank != kRoot) {
      if (!part.active(rank)) return;
      if (transport.send)
        transport.send();
      else
        comm.send_bytes(c_block, static_cast<std::size_t>(part.c_elements(rank)) * esize, kRoot, kTagBlock);
      phases.emplace_back("gather", MPI_Wtime() - t);
      return;
    }
    const int blocks = part.grid().size();
    std::optional<std::string> write_error;
    double write_s = 0, receive_s = 0;
    const auto receive = [&](int r, void* into) {
      const double t0 = MPI_Wtime();
      const std::size_t bytes = static_cast<std::size_t>(part.c_elements(r)) * esize;
      if (transport.receive)
        transport.receive(r, into, bytes);
      else
        comm.recv_bytes(into, bytes, r, kTagBlock);
      receive_s += MPI_Wtime() - t0;
    };
    // Only this function's one writer thread at a time calls HDF5.
    const auto write = [&](int r, const void* data) {  // runs on a second thread: no MPI here
      if (write_error || (r == kRoot && root_written)) return;
      const auto rows = part.rows_of(r), cols = part.cols_of(r);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        writer->write_block(rows.begin, cols.begin, rows.size(), cols.size(), data);
      } catch (const std::exception& e) {
        write_error = e.what();
      }
      write_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    void* const buffers[2] = {c_block, spare};
    for (int r = 0; r < blocks; ++r) {
      progress.step("writing C: block " + std::to_string(r + 1) + " of " + std::to_string(blocks));
      if (!spare) {  // one buffer: receive, then write
        if (r != kRoot) receive(r, c_block);
        write(r, c_block);
        continue;
      }
      // Two buffers: block r (already here) is written on a thread while block r + 1 arrives.
      void* const here = buffers[r % 2];
      if (r + 1 < blocks) {
        std::thread writing([&write, r, here] { write(r, here); });
        try {
          receive(r + 1, buffers[(r + 1) % 2]);
        } catch (...) {
          writing.join();
          throw;
        }
        writing.join();
      } else {
        write(r, here);
      }
    }
    phases.emplace_back("gather", receive_s);
    phases.emplace_back("write", write_s);
    if (write_error) throw IoError(*write_error);
  });
}

BackgroundRelease::BackgroundRelease(const backend::Backend* be, std::function<void()> release)
    : thread_([this, be, release = std::move(release)] {
        const auto start = std::chrono::steady_clock::now();
        if (be) be->enter_thread();
        release();
        seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }) {}

BackgroundRelease::~BackgroundRelease() {
  if (thread_.joinable()) thread_.join();
}

double BackgroundRelease::wait() {
  if (thread_.joinable()) thread_.join();
  return seconds_;
}

std::int64_t gather_spare_elements(const partition::Partition& part) {
  std::int64_t most = 0;
  for (int r = 1; r < part.grid().size(); r += 2) most = std::max(most, part.c_elements(r));
  return most;
}

}  // namespace tessera::run
