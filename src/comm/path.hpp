#pragma once
// How ranks move data (`--comm`): host MPI, CUDA-aware MPI, or NCCL between GPUs. The choice is
// made once per job, from values every rank agrees on; the exchanges of the chosen path are then
// built by make_transport (comm/exchange.hpp), so no algorithm asks the path again.
#include <optional>
#include <string>
#include <vector>

namespace tessera::comm {

enum class Path {
  host,        // MPI on (page-locked) host memory: any MPI, any backend
  cuda_aware,  // MPI on device memory, where the MPI library reports CUDA support at run time
  nccl,        // NCCL between the GPUs (NVLink / PCIe peer links); one rank per GPU
};

// "host", "cuda-aware", "nccl": the --comm value and the report's `comm` field.
std::string path_name(Path path);

// --comm as given: a path's name, or "auto" (nullopt: the algorithm's choice). Throws InputError
// for another name.
std::optional<Path> parse_path(const std::string& text);

// --comm's words: auto and every path's name.
std::vector<std::string> path_words();

// Whether this build has NCCL.
bool nccl_compiled();

// Whether the path moves a panel as one MPI message (int counts: a panel is at most INT_MAX
// elements and bytes); NCCL counts are size_t.
bool int_counts(Path path);

// The path of exchanges between devices for --comm `want` (nullopt: auto), given what every rank
// has: the cuda backend (`cuda`), NCCL usable (`nccl`: built with it and one rank per GPU), an
// MPI library that is CUDA-aware at run time (`cuda_aware`). `auto` takes the first that applies
// of nccl, cuda-aware, host. Throws InputError for a path this job cannot take.
Path choose_path(std::optional<Path> want, bool cuda, bool nccl, bool cuda_aware);

// The path of sums of partial products: nccl where usable and not refused (--comm host), else
// host. Throws InputError for --comm nccl where it is not usable.
Path choose_reduce_path(std::optional<Path> want, bool nccl);

}  // namespace tessera::comm
