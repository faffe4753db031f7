#pragma once
// Which algorithm runs a job, on how many ranks, and how its ranks communicate: decided once, on
// rank 0, from the footprint model (algorithms/footprint.hpp), for the run and its dry run alike.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/footprint.hpp"
#include "algorithms/machine.hpp"

namespace tessera::algorithms {

// What was asked: --algorithm and the options that constrain the choice.
struct Request {
  std::string algorithm = "auto";  // auto | panels | summa | ksplit
  std::string comm = "auto";       // auto | host | cuda-aware | nccl
  std::string kernel = "auto";
  std::string write = "auto";  // auto | in-place | gather
  std::int64_t panel_width = 0;
  std::int64_t gpu_memory = 0;  // --gpu-memory in bytes (0: none)
  bool verify = false, baseline = false;
  bool grid_given = false;  // --grid: the grid is the user's, not the model's
  int bands = 0;            // TESSERA_BANDS=N: summa's and ksplit's bands of C (0: the model's)
};

// What the ranks have, as far as the choice depends on it.
struct Environment {
  bool gpu = false;         // the ranks compute on GPUs (one each)
  bool nccl = false;        // built with NCCL (and on GPUs)
  bool cuda_aware = false;  // the MPI library is CUDA-aware
};

struct Choice {
  std::string algorithm;
  Problem problem;  // with the grid it runs on (ranks beyond it stay idle)
  Setting setting;
  Footprint footprint;
  std::string why;  // one line: the rule, or the model's prediction that overrode it
};

// Throws InputError for an unknown name, or a choice that cannot honour another option (--verify
// and --baseline need the panels' whole A rows and B columns; --gpu-memory means out of core,
// which only panels does; --comm and --panel-width belong to some algorithms only).
//
// `auto` starts from the rule of thumb of the traffic per rank (words moved into a GPU or across
// the network):
//  - ksplit when the ranks are GPUs joined by NCCL, P >= 2 and the P partial products are no
//    bigger than the inputs (P M N <= (M + N) K): each input word moves once, C is summed over NVLink;
//  - summa when P >= 2 and either the GPUs are joined by NCCL or the grid is 2-D;
//  - panels otherwise (one rank, a 1-D grid on host MPI: no broadcast saves anything);
// then asks the model for every algorithm that can run the job, on all ranks and (without --grid)
// on fewer ranks where extra ranks cannot help, and takes the shortest predicted run when it is
// more than kClearlyFaster shorter than the rule's. On GPUs, last, more busy GPUs must be clearly
// faster (by kClearlyFaster) than the fastest run on fewer: each added GPU costs start-up,
// NCCL groups and teardown that the model only estimates.
Choice choose(const Request& r, const Problem& p, const Environment& env, const MachineModel& m);

// The setting `algorithm` runs with for this request and environment (the comm path that `auto`
// of --comm would take). Throws InputError for a path that cannot be taken.
Setting setting_for(const std::string& algorithm, const Request& r, const Problem& p, const Environment& env);

inline constexpr double kClearlyFaster = 0.10;

}  // namespace tessera::algorithms
