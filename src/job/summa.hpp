#pragma once
// `tessera run --algorithm summa`: SUMMA (van de Geijn & Watts) on a pr x pc grid. Rank (i, j)
// reads only A(i, j) (its block-row's rows, the K columns of grid column j) and B(i, j) (the K
// rows of grid row i, its block-column's columns), so each input word is read once and a rank
// holds O((MK + KN + MN) / P) words. K is walked in panels (partition::summa_panels): for each, the
// ranks holding its A columns broadcast them along their grid row and the ranks holding its B
// rows broadcast them down their grid column; every rank adds A_p B_p into its C block, kept on
// its device. Two panel slots: the next panel travels while the current one multiplies.
//
// Communication paths (--comm; the report's "comm" says which ran):
//   nccl        broadcasts between GPUs (ncclBroadcast, NVLink / PCIe peer), fully asynchronous:
//               the host only enqueues. Where the backend has NCCL and no two ranks share a GPU.
//   cuda-aware  MPI_Bcast on device memory; where the MPI library reports CUDA support at run time.
//   host        MPI_Ibcast on page-locked host staging, then copied to the GPU; any MPI. The
//               host waits on MPI while the GPU multiplies the previous panel.
// auto takes the first that applies (comm::choose_path); the CPU backend always uses host. The
// exchanges of each path live in the comm layer (comm/exchange.hpp).
// C blocks are then gathered to rank 0 and written, as in the panels algorithm.
#include "comm/comm.hpp"
#include "job/background_release.hpp"
#include "job/choose_algorithm.hpp"
#include "job/gather.hpp"
#include "job/job_start.hpp"
#include "job/rank_report.hpp"
#include "job/pipeline.hpp"

namespace tessera::job {

// Panel width when --panel-width is 0: wide enough that a panel's multiply dwarfs its launch
// and transfer latency, narrow enough that two slots stay small next to the C block.
constexpr std::int64_t kSummaWidthGpu = 1024;
constexpr std::int64_t kSummaWidthCpu = 256;

// Collective over `comm`, like run_job (errors are agreed on by every rank).
void run_summa(const RunOptions& o, const comm::Comm& comm, JobStart start);

}  // namespace tessera::job
