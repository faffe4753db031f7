#pragma once
// Set-up and checks every algorithm (panels, summa, ksplit) runs on every rank's data.
#include <cstdint>
#include <string>

#include <memory>

#include "backend/backend.hpp"
#include "core/dtype.hpp"
#include "comm/comm.hpp"
#include "io/nonfinite.hpp"
#include "report/report.hpp"

namespace tessera::run {

// Non-finite values in a rows x cols piece of a matrix whose full rows are `ld_total` long,
// placed at (row0, col0): the count, and the first position as a row-major index of the whole
// matrix (exact below 2^53). Callers pass pieces that do not overlap across ranks.
using NonfiniteScan = io::NonfiniteCount;
NonfiniteScan scan_nonfinite(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                             std::int64_t col0, std::int64_t ld_total);

// Sums the scans over the ranks and, unless allowed, refuses NaN/Inf in A or B with the count
// and the first (row, col); a value that is finite in the file but overflows float32 on
// conversion is named as such (the cause to fix is --dtype, not the data). Collective (a
// Comm::step): throws the same JobError on every rank.
void refuse_nonfinite(const comm::Comm& comm, const std::string& a_name, const NonfiniteScan& a,
                      std::int64_t a_cols, const std::string& b_name, const NonfiniteScan& b, std::int64_t b_cols,
                      bool allowed);

// "ranks 0, 2 share NVIDIA H200 [...]" for ranks that report the same GPU (`gpu`: host and
// device, "" for none), or "" when none share. Collective; the same text on every rank.
std::string shared_gpu_note(const comm::Comm& comm, const std::string& gpu);

// The rank's backend (`backend_name`, placed by `where`) and the kernel `kernel_name` stands for:
// "auto" is the backend's choice for an m x n x k GEMM. Fills me.device, me.device_id and
// me.warnings. Throws InputError for a kernel the backend does not have (listing those it has).
// Not collective: call it inside a Comm::step.
std::unique_ptr<backend::Backend> make_rank_backend(const std::string& backend_name, const backend::Placement& where,
                                                    const std::string& kernel_name, DType dtype, std::int64_t m,
                                                    std::int64_t n, std::int64_t k, report::RankRecord& me,
                                                    std::string& kernel);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Refuses, up front and on every rank (a Comm::step), a job whose ranks on some node need more
// host memory than the node has: `need` is this rank's bytes, `what` says what they hold (for
// the message, e.g. "A rows, B columns and C block of a 2x2 grid"). Collective.
void refuse_over_node_memory(const comm::Comm& comm, double need, const std::string& what,
                             const std::string& advice = "use more ranks on more nodes");

// MemTotal of this node in bytes (0 if unknown). Not MemAvailable: page cache is reclaimable,
// and some virtual machines grow their memory as it is used.
double node_memory_bytes();

// Peak resident memory of this process so far, in bytes (the report's peak_host_bytes).
std::int64_t peak_rss_bytes();

// Seconds since this process was started (exec), from the kernel's record of its start time
// (10 ms resolution); -1 where unknown. The report's start-up is this less the job's own time.
double seconds_since_process_start();

}  // namespace tessera::run
