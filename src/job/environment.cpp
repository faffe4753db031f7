#include "job/environment.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend/backend.hpp"
#include "comm/path.hpp"

namespace tessera::job {

namespace {

// A number for the GPU this rank would compute on, the same on every rank that would compute on
// it (host and UUID, else PCI bus id, else its index), exact in a double; 0: no GPU.
double gpu_key(const algorithms::Asked& asked, const comm::NodeInfo& node) {
  if (asked.backend == backend::Kind::cpu) return 0;
  const int count = backend::visible_gpu_count();
  if (count == 0) return asked.backend == backend::Kind::cuda ? 1 : 0;  // its start will say there is none
  const int device = node.local_rank % count;
  const backend::DeviceIdentity id = backend::gpu_identity(device);
  const std::string name = !id.uuid.empty() ? id.uuid : !id.pci_bus_id.empty() ? id.pci_bus_id : std::to_string(device);
  constexpr std::size_t kExact = (std::size_t{1} << 52) - 1;  // below 2^53: exact in a double
  return static_cast<double>((std::hash<std::string>{}(node.host + "|" + name) & kExact) | 1);
}

}  // namespace

algorithms::Environment agree_environment(const algorithms::Asked& asked, const comm::Comm& comm, int answering) {
  const int size = comm.size();
  answering = std::clamp(answering, 1, size);
  // [answering ranks on a GPU, answering ranks with a CUDA-aware MPI, then each rank's GPU key at
  // its place]
  std::vector<double> facts(2 + static_cast<std::size_t>(size), 0.0);
  // Collective the first time (every rank's host name), so every rank asks, answering or not.
  const comm::NodeInfo node = comm.node();
  if (comm.rank() < answering) {
    const double key = gpu_key(asked, node);
    facts[0] = key != 0 ? 1 : 0;
    facts[1] = comm::mpi_cuda_aware() ? 1 : 0;
    facts[2 + static_cast<std::size_t>(comm.rank())] = key;
  }
  comm.sum_in_place(facts.data(), facts.size());
  algorithms::Environment env;
  const int gpus = static_cast<int>(facts[0]);
  env.gpu = gpus == answering;
  env.mixed = gpus > 0 && gpus < answering;
  env.nccl = comm::nccl_compiled();
  env.cuda_aware = static_cast<int>(facts[1]) == answering;
  std::unordered_set<double> seen;
  for (int r = 0; r < answering; ++r) {
    const double k = facts[2 + static_cast<std::size_t>(r)];
    if (k != 0 && !seen.insert(k).second) {
      env.shared_gpu_from = r;
      break;
    }
  }
  return env;
}

}  // namespace tessera::job
