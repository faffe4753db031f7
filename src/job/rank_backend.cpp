#include "job/rank_backend.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tessera::job {

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
      note += (note.empty() ? "" : "; ") + std::string("ranks ") + ranks + " share " + all[i].substr(all[i].find('|') + 1);
  }
  return comm.broadcast(note, 0);
}

std::unique_ptr<backend::Backend> make_rank_backend(const std::string& backend_name, const backend::Placement& where,
                                                    const std::string& kernel_name, DType dtype, std::int64_t m,
                                                    std::int64_t n, std::int64_t k, report::RankRecord& me,
                                                    std::string& kernel) {
  auto be = backend::make_backend(backend_name, where);
  kernel = kernel_name == "auto" ? be->resolve_kernel(dtype, m, n, k) : kernel_name;
  const auto names = be->kernels();
  if (std::find(names.begin(), names.end(), kernel) == names.end()) {
    std::string list;
    for (const auto& nm : names) list += (list.empty() ? "" : ", ") + nm;
    throw InputError("unknown kernel '" + kernel + "' for the " + be->name() + " backend (choose: auto, " + list + ")");
  }
  me.device = be->device();
  me.device_id = be->device_id();
  me.warnings = be->warnings();
  return be;
}

}  // namespace tessera::job
