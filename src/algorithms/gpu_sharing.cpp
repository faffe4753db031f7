#include "algorithms/gpu_sharing.hpp"

#include "comm/peers.hpp"

#include <algorithm>

namespace tessera::algorithms {

std::string shared_gpu_note(const comm::Comm& comm, const std::string& gpu) {
  const auto all = comm.gather(gpu, 0);
  std::string note;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto first_use = std::find(all.begin(), all.end(), all[i]) - all.begin();
    if (all[i].empty() || static_cast<std::size_t>(first_use) != i) continue;  // no GPU, or reported already
    std::string ranks;
    int users = 0;
    for (std::size_t j = i; j < all.size(); ++j)
      if (all[j] == all[i]) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(j);
        ++users;
      }
    if (users > 1)
      note +=
          (note.empty() ? "" : "; ") + std::string("ranks ") + ranks + " share " + all[i].substr(all[i].find('|') + 1);
  }
  return comm.broadcast(note, 0);
}

void note_nccl_transport(const comm::Comm& comm, int device, report::JobReport& job, report::RankRecord& me) {
  const comm::PeerSurvey peers = comm::survey_peers(comm, device);
  job.nccl_transport = peers.transport;
  if (comm.rank() == 0) me.warnings.insert(me.warnings.end(), peers.warnings.begin(), peers.warnings.end());
}

}  // namespace tessera::algorithms
