#pragma once
// Each rank's record of the run, and its way to rank 0's table and JSON report.
#include <functional>

#include "algorithms/algorithm.hpp"
#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "job/job_options.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"

namespace tessera::job {

// Fills the share fields of a rank's record: active, and for an active rank its block (i, j), its
// rows and columns of C, its flops.
void describe_share(const algorithms::Share& s, report::RankRecord& me);

// The end of every run: each rank's record (with its peak host memory, from `be` its peak device
// memory, and its process start-up up to `process_began`, MPI_Wtime()) goes to rank 0's
// job.ranks; job.wall_seconds becomes the slowest rank's time since `started` on every rank.
// Collective.
void gather_records(const comm::Comm& comm, report::JobReport& job, report::RankRecord me, double started,
                    double process_began, const backend::Backend* be);

// Rank 0 prints the table (unless --quiet), then `after_table` (if any), and writes the JSON
// report (--report). Collective: a report that cannot be written fails on every rank. With
// `json_out` (on every rank or none), the JSON report, rank 0's, is left there on every rank.
void publish_report(const JobOptions& o, const comm::Comm& comm, const report::JobReport& job,
                    const std::function<void()>& after_table = {}, std::string* json_out = nullptr);

}  // namespace tessera::job
