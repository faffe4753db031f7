#pragma once
// The footprint of a job: what each rank holds in host and GPU memory, reads, sends, receives and
// writes, and how long it takes, from the algorithm's own model (Algorithm::rank_footprint) and the
// machine's rates (algorithms/machine.hpp). One model, used by the dry run (what it prints), by
// `auto` (the algorithm and rank count with the shortest predicted run) and by the up-front
// refusals (host memory per node). Pure: no MPI, no files.
#include <cstdint>
#include <string>

#include "algorithms/machine.hpp"
#include "algorithms/setting.hpp"
#include "core/dtype.hpp"
#include "partition/partition.hpp"

namespace tessera::algorithms {

struct RankFootprint {
  std::int64_t rows = 0, cols = 0;         // the C block (a partial of all of C for ksplit)
  std::int64_t host_bytes = 0;             // its data: A and B parts, C, staging (no process overhead)
  std::int64_t gpu_bytes = 0;              // what its GPU holds at the peak
  std::int64_t read_bytes = 0;             // from the input files
  std::int64_t recv_bytes = 0;             // from other ranks while computing (summa's panels, sums)
  std::int64_t send_bytes = 0;             // to other ranks (C to rank 0, partial C)
  std::int64_t write_bytes = 0;            // into the output file
  int nccl_groups = 0;                     // NCCL communicators it joins
  bool groups_join_while_reading = false;  // ... in the background, while it reads (ksplit)
  bool staged = false;                     // A, B and C staged through the GPU (no page-locked blocks)
  bool gathers_on_devices = false;         // gathered, its C blocks travel GPU to GPU (NCCL), not by host MPI
  double read_seconds = 0;                 // reading that the compute does not hide
  double compute_seconds = 0;              // copies, kernels and communication
  double comm_seconds = 0;                 // ... of which communication with other ranks (not hidden)
  std::int64_t internode_bytes = 0;        // bytes it sends or receives from ranks of other nodes
  double write_seconds = 0;                // writing that the compute does not hide
  double seconds() const { return read_seconds + compute_seconds + write_seconds; }
};

// The phases of a predicted run, end to end (from launch to exit).
struct Prediction {
  double startup = 0;   // processes, and the NCCL groups
  double read = 0;      // the slowest rank's exposed read
  double compute = 0;   // the slowest rank's compute and communication
  double write = 0;     // exposed writes, rank 0's gather, and the durable flush before the commit
  double compress = 0;  // rank 0 compressing C (--compression), part of write
  // The slowest rank's communication with other ranks, part of compute (summa's panels, ksplit's
  // sums) or of write (rank 0 receiving gathered C): not a phase of its own.
  double communication = 0;
  double total() const { return startup + read + compute + write; }
  std::string bound() const;  // the phase that takes longest: "start-up", "read", "compute", "write"
};

struct Footprint {
  std::string algorithm;
  Setting setting;
  partition::GridShape grid;  // {1, 1} for ksplit
  int ranks = 1;              // ranks of the job
  int busy = 1;               // ranks that compute (the others are idle)
  RankFootprint root;         // rank 0, with what it gathers
  RankFootprint largest;      // the slowest rank other than 0 (rank 0 alone on one rank), with
                              // host, GPU and read bytes the most of any rank other than 0
  std::int64_t total_read_bytes = 0;
  std::int64_t total_comm_bytes = 0;  // bytes sent between ranks in all
  std::int64_t max_send_bytes = 0, max_recv_bytes = 0;
  Prediction predicted;
  double predicted_seconds() const { return predicted.total(); }
};

}  // namespace tessera::algorithms
