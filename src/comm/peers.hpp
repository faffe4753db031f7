#pragma once
// Which transport NCCL can use between the GPUs of the ranks that share a node, and whether the
// job's GPU binding took it away. NCCL moves data GPU to GPU over NVLink or PCIe only where each
// rank's process can see its peer's GPU and open peer access to it; a batch system that gives
// each task one GPU (Slurm's --gpus-per-task, per-task device cgroups) hides the peers, and NCCL
// then falls back to staging through host memory (SHM), several times slower. The report names
// the transport and warns about such pairs (slurm/README.md).
#include <string>
#include <vector>

#include "comm/comm.hpp"

namespace tessera::comm {

// What one pair of ranks on one node can do.
struct PeerLink {
  bool same_host = true;
  bool visible = false;      // the peer's GPU is visible in this rank's process
  bool peer_access = false;  // cudaDeviceCanAccessPeer
  bool nvlink = false;       // NVML: the two GPUs are joined by NVLink
};

// NCCL's settings that change the transport (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_P2P_LEVEL).
struct NcclEnv {
  bool p2p_disabled = false;
  bool shm_disabled = false;
  std::string p2p_level;
  static NcclEnv from_environment();
};

// The transport NCCL takes for a pair: "P2P/NVLink", "P2P/PCIe", "SHM" or "NET" (across hosts,
// or within one when both peer access and shared memory are off). Pure.
std::string nccl_transport(const PeerLink& link, const NcclEnv& env);

struct PeerSurvey {
  std::string transport;              // the slowest pair's ("" with one rank per node)
  std::vector<std::string> warnings;  // pairs on one node that cannot use peer access, and why
};

// Collective over `world`: every rank says its host and GPU (PCI bus id of `device`, -1 for
// none); the ranks of each node check, pair by pair, what NCCL can use between them. The result
// is the same on every rank. Needs a build with CUDA (else: transport "", no warnings).
PeerSurvey survey_peers(const Comm& world, int device);

}  // namespace tessera::comm
