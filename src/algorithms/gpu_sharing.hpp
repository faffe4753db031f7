#pragma once
// Ranks that compute on one GPU: they compete for it, and NCCL refuses a group with one GPU twice.
#include <string>

#include "comm/comm.hpp"
#include "report/report.hpp"

namespace tessera::algorithms {

// "ranks 0, 2 share NVIDIA H200 [...]" for ranks that report the same GPU (`gpu`: host and
// device, "" for none), or "" when none share. Collective; the same text on every rank.
std::string shared_gpu_note(const comm::Comm& comm, const std::string& gpu);

// Collective, where the job's ranks exchange data with NCCL: which transport NCCL has between
// the GPUs of each node (P2P/NVLink, P2P/PCIe, SHM, NET: comm/peers.hpp) goes into the report,
// and pairs of ranks on one node that cannot link their GPUs directly become rank 0's warnings.
void note_nccl_transport(const comm::Comm& comm, int device, report::JobReport& job, report::RankRecord& me);

}  // namespace tessera::algorithms
