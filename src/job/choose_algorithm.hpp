#pragma once
// Which algorithm runs a job (--algorithm), and the options each one refuses.
#include <cstdint>
#include <string>

#include "job/pipeline.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

// --algorithm auto|panels|summa|ksplit -> the one that runs. Throws InputError for an unknown
// name, or a choice that cannot honour another option (--verify and --baseline need the
// panels' whole A rows and B columns; --gpu-memory means out of core, which only panels does).
// `auto` models the traffic per rank (words moved into a GPU or across the network):
//  - ksplit when the ranks are GPUs joined by NCCL (cuda, nccl), P >= 2 and the P partial
//    products are no bigger than the inputs (P M N <= (M + N) K; 2 ranks on a cube qualify):
//    each input word moves once and C is summed over NVLink (job/ksplit.hpp);
//  - summa when P >= 2 and either the GPUs are joined by NCCL (panels are broadcast between
//    GPUs instead of copied from the host to each) or the grid is 2-D (panels would hold pr or
//    pc copies of A and B; summa holds one, memory O((MK + KN + MN) / P) per rank);
//  - panels otherwise (one rank, a 1-D grid on host MPI: no broadcast saves anything).
std::string choose_algorithm(const RunOptions& o, bool cuda, bool nccl, int nranks, std::int64_t m, std::int64_t n,
                             std::int64_t k, partition::GridShape grid);

}  // namespace tessera::job
