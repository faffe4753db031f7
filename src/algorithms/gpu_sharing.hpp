#pragma once
// Ranks that compute on one GPU: they compete for it, and NCCL refuses a group with one GPU twice.
#include <string>

#include "comm/comm.hpp"

namespace tessera::algorithms {

// "ranks 0, 2 share NVIDIA H200 [...]" for ranks that report the same GPU (`gpu`: host and
// device, "" for none), or "" when none share. Collective; the same text on every rank.
std::string shared_gpu_note(const comm::Comm& comm, const std::string& gpu);

}  // namespace tessera::algorithms
