#pragma once
// The job report: data first (JSON, schema in docs/report.md), then a table for people.
// Knows nothing of MPI, HDF5 or CUDA: the pipeline fills these structs.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/provenance.hpp"  // InputRecord
#include "report/repeats.hpp"     // Phases, Repeats

namespace tessera::report {

struct RankRecord {
  int rank = 0;
  std::string host;
  std::string device;  // "cpu (...)" or the GPU name
  int device_id = -1;
  std::string device_uuid, device_pci_bus_id;  // the GPU's, as nvidia-smi names it; empty: none or unknown
  bool active = false;                         // false: idle, the grid needs fewer ranks than the job has
  int block_row = -1, block_col = -1;
  std::int64_t row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  double flops = 0;
  Phases phases;                // seconds: read, compute (h2d, kernel, d2h on a GPU), gather, write
  std::string baseline_kernel;  // --baseline: the kernel compared against on the same block
  double baseline_seconds = 0;  // its compute time (kernel time on a GPU)
  std::vector<std::string> warnings;
  std::int64_t peak_host_bytes = 0;  // peak resident memory of the rank's process
  std::int64_t peak_gpu_bytes = 0;   // peak GPU memory the rank's GEMMs held (0 on the CPU)
  // Seconds from the process's start to the job's (launch, loading libraries, MPI start-up); -1:
  // unknown.
  double startup_seconds = -1;
  int cpus = 0;  // cores the rank's process may run on (its CPU affinity, comm/cpu_share.hpp)
  // Bytes this rank read from the input files and wrote into the output (its share of C, or all of
  // it when it gathered), for its read and write rates.
  std::int64_t read_bytes = 0, write_bytes = 0;
  // A, B and C passed through the backend's own staging buffers, never whole in host memory
  // (backend.hpp's StagedProblem).
  bool staged = false;
  // What arithmetic the rank's kernel chose at run time and the error it guarantees (f64-ozaki:
  // its moduli and bits, or the DGEMM it ran instead and why); empty where the kernel's name says
  // it all.
  std::string precision;

  double phase(const std::string& name) const;  // 0 when absent
  bool has_phase(const std::string& name) const;
  // Seconds the rate is taken over: the kernel alone when the backend reports it, else compute.
  double compute_seconds() const;
  double gflops() const;
  // Bytes per second over the "read" ("write") phase, in GB/s; 0 without the phase or the bytes.
  double read_gbps() const;
  double write_gbps() const;
};

struct JobReport {
  std::string version;
  std::string started_at;  // ISO 8601, UTC
  std::string a, b, c;     // dataset references
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  std::string c_dtype;  // what C is stored as (--c-dtype); "" or dtype: as computed
  int grid_rows = 1, grid_cols = 1;
  int nranks = 1;
  std::string algorithm = "panels";
  // C = alpha op(A) op(B) + beta C_old (--transpose-a/-b: A's, B's dataset used as its transpose).
  bool transpose_a = false, transpose_b = false;
  double alpha = 1, beta = 0;
  // How ranks moved data during the compute: "host" (MPI on host memory), "nccl" (GPU to GPU),
  // "cuda-aware" (MPI on GPU memory), "none" (one rank).
  std::string comm = "host";
  // With comm "nccl": the transport NCCL has between the GPUs of a node, the slowest pair's
  // ("P2P/NVLink", "P2P/PCIe", "SHM", "NET"; comm/peers.hpp); "" otherwise.
  std::string nccl_transport;
  // The MPI network (comm/mpi_network.hpp): nodes, pml, what carried messages between nodes and
  // within a node, and tessera's choice before MPI_Init (null: not known).
  nlohmann::json network;
  // Pieces A was read in while the GEMM ran (panels, job/stream.hpp); 1: read before it.
  int stream_chunks = 1;
  // How C reached the output file (job/output.hpp): "in place ..." or "gather (why)".
  std::string write = "gather";
  std::string backend, kernel;
  double wall_seconds = 0;
  std::vector<RankRecord> ranks;
  nlohmann::json verification;        // --verify: method, passed, vectors, residuals (null otherwise)
  std::vector<std::string> warnings;  // about the whole job, e.g. a C that holds NaN or Inf
  // The footprint model's prediction (algorithms/footprint.hpp): seconds, bound, machine (null: none).
  nlohmann::json predicted;
  // The run's settings as its algorithm describes them (Algorithm::describe): the dry run's value.
  nlohmann::json settings;
  // --repeat / --warmup: every counted run's times (the fields above describe the last run).
  Repeats repeats;
  // The files the job read, as rank 0 found them before reading (the provenance's `inputs`).
  std::vector<InputRecord> inputs;

  double total_flops() const;
  double max_compute_seconds() const;
  double mean_compute_seconds() const;  // over active ranks
  double load_imbalance() const;        // max / mean compute over active ranks
  double aggregate_gflops() const;      // total flops / slowest rank's compute
  // The phase that took longest, the slowest rank's of each: "start-up", "read", "compute" or
  // "write" (writing and gathering C); "" without ranks.
  std::string bound_phase() const;
};

nlohmann::json to_json(const RankRecord& r);
RankRecord rank_from_json(const nlohmann::json& j);
nlohmann::json to_json(const JobReport& r);
// The process's provenance (provenance()) with what the job adds: its inputs, the hosts of its
// ranks and the GPU each busy rank used (as its backend named it). Without the ranks' records
// (C's attribute, written before they reach rank 0) `hosts` and `gpus` are left out.
nlohmann::json job_provenance(const JobReport& r);
std::string format_table(const JobReport& r);

std::string utc_timestamp();

}  // namespace tessera::report
