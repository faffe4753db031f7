#pragma once
// `tessera run --dry-run`: what a run would need and do, without doing it. For M, N, K (from the
// input files or --m/--n/--k) on P ranks (the job's, or --ranks up to 100,000 without
// launching them): the grid, per-rank host and GPU memory, communication volume per rank and in
// total, and a predicted time from a machine model (bandwidths and kernel rates measured on the
// H200 machine, docs/performance.md). Pure: no MPI, no files.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

// Rates of the machine a run is predicted for. Defaults: measured 2026-11-29 on the H200
// machine (docs/performance.md) and, for files, a conservative parallel file system.
struct MachineModel {
  double h2d_bytes_per_s = 50e9;       // pinned host -> device (measured 53 GB/s)
  double d2h_bytes_per_s = 50e9;       // device -> host (measured 55 GB/s)
  double gather_bytes_per_s = 8e9;     // MPI point-to-point to rank 0, host memory
  double read_bytes_per_s = 2e9;       // HDF5 hyperslab reads, per rank
  double write_bytes_per_s = 1.5e9;    // HDF5 write on rank 0
  double gpu_flops = 40e12;            // the default GPU kernel's rate (warptile f32: 42-43 TFLOP/s at 8192)
  double cpu_flops = 50e9;             // OpenBLAS on one rank's cores
  double device_link_bytes_per_s = 100e9;  // GPU to GPU with NCCL (NVLink 395 GB/s peak; broadcasts reach less)
  // Resident memory of a rank before its data: libraries, MPI and OpenBLAS buffers. Measured as
  // the peak RSS of a 1x1x1 run (2 ranks, CPU backend, development machine, 2026-11-30, cuBLAS
  // no longer loaded at start-up): 23-28 MiB.
  std::int64_t host_overhead_bytes = 28ll << 20;
  // What a GPU rank adds to that (CUDA runtime, cuBLAS): measured on the H200 machine as the
  // peak RSS over the model of 16384^3 runs without NCCL (panels, summa --comm host): 115 MiB.
  std::int64_t gpu_host_overhead_bytes = 115ll << 20;
  // Each NCCL communicator a rank joins (ksplit: 1; summa: grid row, grid column, all ranks),
  // measured on the H200 machine with 2 GPUs over NVLink: ~800 MiB of device memory (buffers
  // per channel and peer) and ~190 MiB of host memory.
  std::int64_t nccl_gpu_bytes_per_comm = 800ll << 20;
  std::int64_t nccl_host_bytes_per_comm = 190ll << 20;
  // Rank 0 of summa receiving the C blocks by NCCL point-to-point: the connections NCCL sets up
  // for it take ~512 MiB more on rank 0's GPU, whatever the block size (measured on the H200
  // machine at 8192^3 and 16384^3, NCCL 2.28: rank 0 +512 / +514 MiB over rank 1).
  std::int64_t nccl_p2p_receive_gpu_bytes = 512ll << 20;
};

// How the run would go: the algorithm (panels, summa, ksplit: job/choose_algorithm.hpp) and, for summa
// and ksplit, how ranks exchange data ("host" MPI or "nccl" between GPUs).
struct PlanChoice {
  std::string algorithm = "panels";
  std::string comm = "host";
  std::int64_t panel_width = 0;  // summa; 0: the default of the backend (job/summa.hpp)
  std::int64_t gpu_memory_limit = 0;  // panels: --gpu-memory (out of core within it); 0: none
  // The GPU kernel adds into C itself (backend::gpu_kernel_accumulates): summa's and chunked
  // ksplit's sums over K need no scratch C on the device.
  bool accumulating_kernel = false;
  // panels and summa: every rank writes its own C block into the output (job/output.hpp), rather
  // than sending it to rank 0 (--write gather, or ranks that do not share the output's file system).
  bool in_place_write = true;
};

struct RankPlan {
  std::int64_t rows = 0, cols = 0;
  std::int64_t host_bytes = 0;     // what the rank holds: its A and B parts, C block, staging
  std::int64_t gpu_bytes = 0;      // what its GPU holds at the peak
  std::int64_t read_bytes = 0;     // from the input files
  std::int64_t recv_bytes = 0;     // from other ranks while computing (summa's panels)
  std::int64_t send_bytes = 0;     // to other ranks: C block to rank 0 (panels, summa), partial C (ksplit)
  double seconds = 0;              // predicted: read + copies + compute + communication
};

struct DryRun {
  PlanChoice choice;
  partition::GridShape grid;
  int ranks = 1;
  RankPlan largest;                // the slowest rank other than 0 (rank 0 alone on one rank), with
                                   // host, GPU and read bytes the most of any rank other than 0
  RankPlan root;                   // rank 0: also receives and writes everything
  std::int64_t total_read_bytes = 0;
  std::int64_t total_comm_bytes = 0;  // bytes sent between ranks in all
  std::int64_t max_send_bytes = 0, max_recv_bytes = 0;  // the most one rank sends / receives
  double predicted_seconds = 0;    // slowest rank's path + rank 0's receive + write
  nlohmann::json to_json() const;
  std::string to_text(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, bool gpu) const;
};

DryRun plan_run(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, int ranks, const partition::GridShape& grid,
                bool gpu, const PlanChoice& choice = {}, const MachineModel& model = {});

}  // namespace tessera::job
