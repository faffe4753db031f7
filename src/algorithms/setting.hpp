#pragma once
// What a run is asked (Asked: the options, parsed once at the edge, job/asked.cpp), what its
// ranks have (Environment: agreed by every rank, job/environment.cpp), the problem they share
// (Problem), and how the run goes (Setting): settled once, on rank 0, by the algorithm's
// settle(), sent to every rank with the plan, printed by the dry run and the report
// (Algorithm::describe), and only read after. start() checks that it still holds.
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/dtype.hpp"
#include "partition/partition.hpp"

namespace tessera::algorithms {

// How C reaches the output file (--write; job/output.hpp).
enum class WriteRoute { automatic, in_place, gather };
// --write's words: auto, in-place, gather.
std::vector<std::string> write_route_words();
// --write as given; InputError naming the words for another.
WriteRoute parse_write_route(const std::string& text);

// What the user asked, typed: one value for the whole job.
struct Asked {
  std::string algorithm = "auto";        // --algorithm: a name of algorithm_names() (checked), or auto
  std::optional<backend::Kind> backend;  // --backend (nullopt: auto)
  std::optional<DType> dtype;            // --dtype (nullopt: auto, from the inputs)
  std::optional<comm::Path> comm;        // --comm (nullopt: auto)
  std::string kernel = "auto";           // --kernel: auto, or a kernel (of the settled backend: common_setting)
  WriteRoute write = WriteRoute::automatic;
  std::int64_t panel_width = 0;              // --panel-width (0: the algorithm's)
  std::int64_t gpu_memory = 0;               // --gpu-memory in bytes (0: none; out of core within it)
  std::string baseline;                      // --baseline: a kernel compared against on each block ("": none)
  bool verify = false;                       // --verify: C checked before any of it is written
  std::optional<partition::GridShape> grid;  // --grid (nullopt: the model's)
  int bands = 0;                             // TESSERA_BANDS: row bands of C (0: the model's)
  // Asked of each rank's whole block (a check or a comparison on it, or its GEMM out of core):
  // `auto` takes the rule of thumb on every rank, without the model's search.
  bool needs_whole_blocks() const { return verify || !baseline.empty() || gpu_memory > 0; }
};

// What the ranks have, agreed by all of them (job/environment.cpp) before anything is settled.
struct Environment {
  bool gpu = false;         // every rank computes on a GPU (the cuda backend)
  bool mixed = false;       // some ranks compute on a GPU, some do not
  bool nccl = false;        // built with NCCL
  bool cuda_aware = false;  // every rank's MPI library is CUDA-aware
  // The lowest rank that computes on a GPU a lower rank computes on too (INT_MAX: none does).
  int shared_gpu_from = INT_MAX;
  // The output route (job/output.hpp): every rank writes its own C into the output file.
  bool in_place_write = true;
  // NCCL can join ranks [0, busy): on GPUs, built with it, one rank per GPU.
  bool nccl_usable(int busy) const { return gpu && nccl && shared_gpu_from >= busy; }
};

// What every rank agrees on before an algorithm runs (job/plan.hpp decides it).
struct Problem {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f64;
  int ranks = 1;              // ranks of the job
  partition::GridShape grid;  // the process grid of panels and summa (ranks beyond it idle)
  // Ranks per node, placed in blocks (rank r on node r / ranks_per_node, as srun and mpirun place
  // them by default); 0: every rank on one node. Messages between nodes go at the machine's
  // internode rate, through each node's one link.
  int ranks_per_node = 0;
  // C's compression (--compression: none, gzip, lz4, zstd, bzip2), done on rank 0: by its pool of
  // `compress_threads` (io::compression_threads: gzip, and lz4, zstd where built with their
  // libraries), else by HDF5's filter pipeline on one thread (compress_threads 1).
  std::string compression = "none";
  int compress_threads = 1;
  // "f16" / "bf16": every value of A and B is exact in that 16-bit type (both stored so, alpha 1;
  // job::half_inputs_of), so `auto` on GPUs multiplies on its tensor cores (cublas-f16 /
  // cublas-bf16: FP32 accumulation, the same accuracy as the float32 GEMM); "": full precision.
  std::string half_inputs{};
  std::int64_t c_bytes() const { return m * n * static_cast<std::int64_t>(dtype_size(dtype)); }
  bool multi_node() const { return ranks_per_node > 0 && ranks > ranks_per_node; }
  int node_of(int rank) const { return ranks_per_node > 0 ? rank / ranks_per_node : 0; }
  int nodes() const { return ranks_per_node > 0 ? (ranks + ranks_per_node - 1) / ranks_per_node : 1; }
};

// How the job runs: each field written in one place (docs/architecture.md, "Decide once"), then
// only read.
struct Setting {
  // Written by common_setting() (setting.cpp), the same for every algorithm:
  bool gpu = false;            // the ranks compute on GPUs
  std::string kernel;          // the kernel every rank runs (`auto` resolved once, for rank 0's share)
  bool in_place_write = true;  // every rank writes its own C rows into the output (the agreed route)
  // Written by the algorithm's settle() (its own file):
  comm::Path comm = comm::Path::host;  // the path its exchanges take
  bool alone = false;                  // no rank exchanges data with another: the report's comm "none"
  std::int64_t panel_width = 0;        // K panel width (summa)
  int bands = 1;                       // row bands of C, each written while the next computes
  std::int64_t gpu_memory_limit = 0;   // --gpu-memory: out of core within it (panels); 0: none
  bool baseline = false;               // a second C for the compared kernel (panels' --baseline)

  bool nccl() const { return gpu && comm == comm::Path::nccl; }
  backend::Kind backend() const { return gpu ? backend::Kind::cuda : backend::Kind::cpu; }
  // The report's and the C attributes' `comm`: the path, or "none".
  std::string comm_name() const { return alone ? "none" : comm::path_name(comm); }
  // Every field, for the plan's broadcast.
  nlohmann::json to_json() const;
  static Setting from_json(const nlohmann::json& j);
};

// The fields common_setting() writes, for `asked` on `environment`, the kernel resolved for an
// m x n x k GEMM (rank 0's share). Throws InputError where the ranks' backends differ.
Setting common_setting(const Asked& asked, const Problem& p, const Environment& environment, std::int64_t gemm_m,
                       std::int64_t gemm_n, std::int64_t gemm_k);

}  // namespace tessera::algorithms
