#pragma once
// What the ranks have, agreed by the ranks the run may compute on before rank 0 settles it
// (algorithms/setting.hpp): GPUs, NCCL, a CUDA-aware MPI, GPUs shared by ranks. One allreduce over
// every rank: not rank 0's guess. Ranks the run does not ask say nothing, and so touch no device
// (Job::settle asks more ranks when rank 0's choice needs them).
#include "algorithms/setting.hpp"
#include "comm/comm.hpp"

namespace tessera::job {

// Collective. Each of ranks [0, answering) says whether it would compute on a GPU (--backend,
// else one is visible) and which one (its host and the UUID of GPU local_rank % visible ones, as
// the cuda backend picks it), and whether its MPI library is CUDA-aware; the environment is
// theirs (`gpu`: all of them on GPUs). Ranks from `answering` on say nothing and start no GPU
// driver. The output route is not among them (Environment::in_place_write stays true:
// job/output.hpp agrees on it).
algorithms::Environment agree_environment(const algorithms::Asked& asked, const comm::Comm& comm, int answering);

}  // namespace tessera::job
