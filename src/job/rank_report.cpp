#include "job/rank_report.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>

#include "io/atomic_file.hpp"
#include "job/process_stats.hpp"

namespace tessera::job {

namespace {
constexpr int kRoot = 0;
}  // namespace

void describe_share(const algorithms::Share& s, report::RankRecord& me) {
  me.active = s.active;
  if (!s.active) return;
  me.block_row = s.block_row;
  me.block_col = s.block_col;
  me.row_begin = s.rows.begin;
  me.row_end = s.rows.end;
  me.col_begin = s.cols.begin;
  me.col_end = s.cols.end;
  me.flops = s.flops;
}

void gather_records(const comm::Comm& comm, report::JobReport& job, report::RankRecord me, double started,
                    double process_began, const backend::Backend* be) {
  me.peak_host_bytes = peak_rss_bytes();
  me.cpus = cpus_in_use();
  if (const double since = seconds_since_process_start(); since >= 0)
    me.startup_seconds = std::max(0.0, since - (MPI_Wtime() - process_began));
  if (be) {
    me.peak_gpu_bytes = be->peak_device_bytes();
    me.precision = be->precision();
  }
  const auto records = comm.gather(report::to_json(me).dump(), kRoot);
  job.wall_seconds = comm.max(MPI_Wtime() - started);
  job.ranks.clear();
  if (comm.rank() == kRoot)
    for (const auto& text : records) job.ranks.push_back(report::rank_from_json(nlohmann::json::parse(text)));
}

void publish_report(const JobOptions& o, const comm::Comm& comm, const report::JobReport& job,
                    const std::function<void()>& after_table, std::string* json_out) {
  std::string json;  // rank 0's, for json_out
  comm.step([&] {
    if (comm.rank() != kRoot) return;
    if (!o.quiet) std::fputs(report::format_table(job).c_str(), stdout);
    if (after_table) after_table();
    std::fflush(stdout);
    if (o.report.empty() && !json_out) return;
    const nlohmann::json j = report::to_json(job);
    // Into the temporary reserved up front (reserve_report), then renamed into place.
    if (!o.report.empty()) io::write_file_replacing(o.report, j.dump(2) + "\n");
    if (json_out) json = j.dump();
  });
  if (json_out) *json_out = comm.broadcast(std::move(json), kRoot);
}

}  // namespace tessera::job
