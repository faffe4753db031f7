#pragma once
// `tessera run --algorithm ksplit`: the ranks split K instead of C. Rank r reads A[:, K_r] and
// B[K_r, :] (partition::KSplit), computes the partial C_r = A[:, K_r] B[K_r, :] (all M x N) and the
// partials are summed onto rank 0: on the GPUs with NCCL (ncclReduce) when the backend can, else
// on the host with MPI_Reduce. Rank 0 copies C to the host once and writes it.
//
// Why: the panels algorithm on a 1 x P grid copies all of A to every GPU and gathers C blocks
// through host MPI; for K >= M, N a K split moves each input word once and sums C over NVLink.
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.hpp"
#include "comm/comm.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"
#include "job/background_release.hpp"
#include "job/choose_algorithm.hpp"
#include "job/gather.hpp"
#include "job/job_start.hpp"
#include "job/rank_report.hpp"
#include "job/pipeline.hpp"

namespace tessera::job {

// Collective over `comm`, like run_job (errors are agreed on by every rank).
void run_ksplit(const RunOptions& o, const comm::Comm& comm, JobStart start);

}  // namespace tessera::job
