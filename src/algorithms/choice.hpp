#pragma once
// Which algorithm runs a job, on how many ranks, and how (its Setting): decided once, on rank 0,
// from the algorithms' own settle() and the footprint model (algorithms/footprint.hpp), for the
// run and its dry run alike. Names no algorithm: each says what the rule of thumb makes of it.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/footprint.hpp"
#include "algorithms/machine.hpp"
#include "algorithms/setting.hpp"

namespace tessera::algorithms {

struct Choice {
  std::string algorithm;
  Problem problem;  // with the grid it runs on (ranks beyond it stay idle)
  Setting setting;
  Footprint footprint;
  std::string why;  // one line: the rule, or the model's prediction that overrode it
};

// Throws InputError for an unknown name, or an algorithm that cannot honour another option (its
// settle() says why).
//
// `auto` starts from the rule of thumb of the traffic per rank (words moved into a GPU or across
// the network): the algorithm whose rule_of_thumb() is highest (each algorithm's file says when
// it is favoured); then, unless the options need whole blocks (Asked::needs_whole_blocks) or the
// job has one rank, asks the model for every algorithm that can run the job, on all ranks and
// (without --grid) on fewer ranks where extra ranks cannot help, and takes the shortest predicted
// run when it is more than kClearlyFaster shorter than the rule's. On GPUs, last, more busy GPUs
// must be clearly faster (by kClearlyFaster) than the fastest run on fewer: each added GPU costs
// start-up, NCCL groups and teardown that the model only estimates.
Choice choose(const Asked& asked, const Problem& p, const Environment& env, const MachineModel& m);

inline constexpr double kClearlyFaster = 0.10;

}  // namespace tessera::algorithms
