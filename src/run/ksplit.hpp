#pragma once
// `tessera run --algorithm ksplit`: the ranks split K instead of C. Rank r reads A[:, K_r] and
// B[K_r, :] (dist::KSplit), computes the partial C_r = A[:, K_r] B[K_r, :] (all M x N) and the
// partials are summed onto rank 0: on the GPUs with NCCL (ncclReduce) when the backend can, else
// on the host with MPI_Reduce. Rank 0 copies C to the host once and writes it.
//
// Why: the panels algorithm on a 1 x P grid copies all of A to every GPU and gathers C blocks
// through host MPI; for K >= M, N a K split moves each input word once and sums C over NVLink.
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.hpp"
#include "dist/comm.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"
#include "run/pipeline.hpp"

namespace tessera::run {

// --algorithm auto|panels|ksplit -> "panels" or "ksplit". `auto` is a simple model: ksplit when
// the backend is cuda with NCCL, P >= 2, no --verify / --baseline (panels-only features), and
// 2K >= max(M, N). Words moved per rank: ksplit M*N (over NVLink) + (M+N)K/P (host to device);
// panels on a 1 x P grid M*K + K*N/P (host to device) + M*N/P (through host MPI). Counted
// alike they break even at K = max(M, N); the reduction runs at NVLink speed (~7x the host
// link, far more than host MPI), so ksplit is taken down to K = max(M, N) / 2.
// Throws InputError for an unknown name, or ksplit asked together with --verify / --baseline.
std::string choose_algorithm(const RunOptions& o, bool cuda, bool nccl, int nranks, std::int64_t m, std::int64_t n,
                             std::int64_t k);

// What run_job decided before handing over: the plan and rank 0's writer.
struct KSplitStart {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f64;
  std::unique_ptr<io::MatrixWriter> writer;  // rank 0 only
  double started = 0;                        // MPI_Wtime() when run_job began
  report::JobReport job;                     // filled up to the inputs
};

// Collective over `comm`, like run_job (errors are agreed on by every rank).
void run_ksplit(const RunOptions& o, const dist::Comm& comm, KSplitStart start);

}  // namespace tessera::run
