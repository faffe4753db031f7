#pragma once
// What the ranks have, agreed by all of them before rank 0 settles the run (algorithms/setting.hpp):
// GPUs, NCCL, a CUDA-aware MPI, GPUs shared by ranks. One allreduce over every rank, idle ones
// included (which ranks the run leaves idle is not known yet): not rank 0's guess.
#include "algorithms/setting.hpp"
#include "comm/comm.hpp"

namespace tessera::job {

// Collective. Each rank says whether it would compute on a GPU (--backend, else one is visible)
// and which one (its host and the UUID of GPU local_rank % visible ones, as the cuda backend
// picks it), and whether its MPI library is CUDA-aware. The output route is not among them
// (Environment::in_place_write stays true: job/output.hpp agrees on it).
algorithms::Environment agree_environment(const algorithms::Asked& asked, const comm::Comm& comm);

}  // namespace tessera::job
