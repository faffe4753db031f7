#pragma once
// The rates of the machine a run is predicted for, kept as data: configs/machines/<name>.json
// (default.json; h200-2gpu.json for the 2-GPU H200 machine). Chosen by --machine NAME|FILE, else
// $TESSERA_MACHINE_FILE, else the file in configs/machines whose "match" names the GPUs rank 0
// sees (e.g. {"gpu": "H200", "gpus": 2}), else default.json, else the built-in defaults below
// (the same numbers as default.json). The footprint model (algorithms/footprint.hpp) turns them
// into predicted read, compute, write and start-up times.
#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace tessera::algorithms {

// The GPUs rank 0 sees: a machine file whose "match" names them is taken when no file is named.
struct GpuNode {
  std::string model;  // e.g. "NVIDIA H200" ("" without a GPU)
  int count = 0;      // GPUs visible to the process
};

struct MachineModel {
  std::string name = "built-in";
  std::string source;  // the file it was read from ("" = built in)
  // Files: one rank reading its hyperslabs (warm page cache or storage), one rank writing its C
  // rows with pwrite (into the page cache), and the storage's durable rate (fsync before the
  // rename) shared by every rank of the job.
  double read_bytes_per_s = 2e9;
  double write_bytes_per_s = 1.5e9;
  double durable_write_bytes_per_s = 1.5e9;
  // ... and what one rank's writes reach of it (one stream of pwrite and fsync; measured 0.9-1.2
  // GB/s on the H200 machine's disk, against ~1.7 GB/s for two ranks together).
  double durable_write_bytes_per_s_one_rank = 1.5e9;
  // Before the job: one process's launch, libraries and MPI start-up (the report's
  // startup_seconds), and setting up one NCCL group (id, join, warm-up).
  double startup_seconds = 0.6;
  double nccl_group_seconds = 0.15;
  // A job with more than one busy GPU rank: what it pays for them outside the phases above (CUDA
  // contexts started side by side, the slowest rank's start, page-locked buffers and NCCL groups
  // torn down). Once per job: the ranks pay theirs side by side (measured on 2 GPUs only). It is
  // why a small product runs faster on one GPU of two.
  double multi_gpu_seconds = 0.3;
  // Page-locking a GPU rank's host blocks (A, B, C) where it reads them, and unlocking them at the
  // end, per byte of them (measured 2026-11-30 on the H200: 3 GiB cost 0.62 s, 12 GiB 2.8 s, whole
  // processes). A staged GEMM (backend.hpp's StagedProblem) pays neither.
  double page_lock_bytes_per_s = 5e9;
  // Copies between pinned host memory and the device (measured 53 / 55 GB/s on the H200).
  double h2d_bytes_per_s = 50e9;
  double d2h_bytes_per_s = 50e9;
  // Between ranks: MPI on host memory (point-to-point, broadcasts, reductions), and GPU to GPU with
  // NCCL (NVLink 395 GB/s peak; broadcasts reach less).
  double network_bytes_per_s = 8e9;
  double device_link_bytes_per_s = 100e9;
  // Between nodes (a job whose ranks span several nodes, Problem::ranks_per_node): one node's link,
  // each way, shared by its ranks' messages to other nodes, and the latency of one message. Measured
  // with `tessera info --probe-network` on ranks of two nodes (its keys go into the machine file).
  double internode_bytes_per_s = 12.5e9;
  double internode_latency_seconds = 2e-6;
  // Kernel rates: the default GPU kernel (warptile f32: 42-43 TFLOP/s at 8192) and OpenBLAS on one
  // rank's cores, per precision.
  double gpu_flops_f32 = 40e12;
  double gpu_flops_f64 = 40e12;
  double cpu_flops_f32 = 50e9;
  double cpu_flops_f64 = 50e9;
  // Compressing C (--compression), bytes of C per second: gzip per thread of rank 0's pool
  // (libdeflate, level 1 with shuffle: 80 MB/s a core on the 2-core development machine,
  // 2026-12-04); lz4 per thread too (tessera's threads where built with liblz4, else HDF5's
  // pipeline on one: h5py with hdf5plugin's filter on the same machine, 2026-12-05, 700-950 MB/s);
  // bzip2 through HDF5's pipeline on one thread (10 MB/s).
  double gzip_bytes_per_s_per_thread = 80e6;
  double lz4_bytes_per_s = 700e6;
  // zstd per thread of rank 0's pool at its default level 3 (with shuffle, uniform float32: an
  // 8192^2 C written by 1 rank's 2 threads at 224-272 MB/s on the 2-core development machine,
  // 2026-12-07).
  double zstd_bytes_per_s_per_thread = 120e6;
  double bzip2_bytes_per_s = 10e6;
  // Resident memory of a rank before its data (peak RSS of a 1x1x1 run, CPU backend: 23-28 MiB),
  // what a GPU rank adds (CUDA runtime: 115 MiB on the H200 machine), and each NCCL communicator
  // (~800 MiB of device and ~190 MiB of host memory with 2 GPUs over NVLink); rank 0 of summa
  // receiving C blocks by NCCL point-to-point holds ~512 MiB more on its GPU.
  std::int64_t host_overhead_bytes = 28ll << 20;
  std::int64_t gpu_host_overhead_bytes = 115ll << 20;
  std::int64_t nccl_gpu_bytes_per_comm = 800ll << 20;
  std::int64_t nccl_host_bytes_per_comm = 190ll << 20;
  std::int64_t nccl_p2p_receive_gpu_bytes = 512ll << 20;

  // Seconds rank 0 spends compressing `bytes` of C with `compression` on `threads` threads (0 for
  // none or an unknown name; bzip2 takes one).
  double compress_seconds(const std::string& compression, double bytes, int threads) const {
    if (compression == "gzip") return bytes / (gzip_bytes_per_s_per_thread * std::max(1, threads));
    if (compression == "lz4") return bytes / (lz4_bytes_per_s * std::max(1, threads));
    if (compression == "zstd") return bytes / (zstd_bytes_per_s_per_thread * std::max(1, threads));
    if (compression == "bzip2") return bytes / bzip2_bytes_per_s;
    return 0;
  }

  // The rate of 2mnk-flop products: a complex one takes 4 times the real work of its part's type.
  double flops(bool gpu, DType dtype) const {
    const bool single = real_of(dtype) == DType::f32;
    const double real = gpu ? (single ? gpu_flops_f32 : gpu_flops_f64) : (single ? cpu_flops_f32 : cpu_flops_f64);
    return real / real_work(dtype);
  }

  // Fields present in `j` replace the defaults; an unknown key or a value that is not a positive
  // number is an InputError naming `where`.
  static MachineModel from_json(const nlohmann::json& j, const std::string& where);
  nlohmann::json to_json() const;
  // --machine `wanted` ("": $TESSERA_MACHINE_FILE, else the first file, by name, whose "match"
  // fits `gpus`, else default.json where found, else built in): a file path (holds '/' or ends
  // in .json), or the name of a file in configs/machines (looked for under the working directory,
  // then in the installation's share/tessera/configs/machines). Throws InputError for a machine
  // file that is named and missing or malformed.
  static MachineModel load(const std::string& wanted, const GpuNode& gpus = {});
  // Whether a file's "match" ({"gpu": part of the model's name, "gpus": their count}) fits.
  static bool matches(const nlohmann::json& match, const GpuNode& gpus);
};

}  // namespace tessera::algorithms
