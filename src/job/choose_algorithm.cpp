#include "job/choose_algorithm.hpp"

#include "core/error.hpp"

namespace tessera::job {

std::string choose_algorithm(const RunOptions& o, bool cuda, bool nccl, int nranks, std::int64_t m, std::int64_t n,
                             std::int64_t k, partition::GridShape grid) {
  const std::string& want = o.algorithm;
  if (want != "auto" && want != "panels" && want != "summa" && want != "ksplit")
    throw InputError("invalid --algorithm '" + want + "' (choose: auto, panels, summa, ksplit)");
  if (want != "auto" && want != "panels") {
    if (o.verify) throw InputError("--verify needs --algorithm panels (run `tessera verify` after " + want + ")");
    if (!o.baseline.empty()) throw InputError("--baseline needs --algorithm panels");
    if (!o.gpu_memory.empty())
      throw InputError("--gpu-memory (out of core) needs --algorithm panels: " + want + " keeps " +
                       (want == "ksplit" ? "all of C" : "its C block") + " on every GPU");
  }
  if (o.comm != "auto" && o.comm != "host" && o.comm != "cuda-aware" && o.comm != "nccl")
    throw InputError("invalid --comm '" + o.comm + "' (choose: auto, host, cuda-aware, nccl)");
  const std::string chosen = [&] {
    if (want != "auto") return want;
    const bool plain = !o.verify && o.baseline.empty() && o.gpu_memory.empty();
    if (!plain || nranks < 2) return std::string("panels");
    const bool nvlink = cuda && nccl && o.comm != "host" && o.comm != "cuda-aware";
    // P partial products of all of C, summed: worth it while they are no bigger than the inputs.
    const double partials = static_cast<double>(nranks) * static_cast<double>(m) * static_cast<double>(n);
    const double inputs = static_cast<double>(k) * (static_cast<double>(m) + static_cast<double>(n));
    if (nvlink && partials <= inputs) return std::string("ksplit");
    if (grid.size() >= 2 && (nvlink || (grid.rows > 1 && grid.cols > 1))) return std::string("summa");
    if (o.comm == "nccl" || o.comm == "cuda-aware") return std::string("summa");  // asked for a device path
    return std::string("panels");
  }();
  if (chosen == "panels" && o.comm != "auto" && o.comm != "host")
    throw InputError("--comm " + o.comm + " needs --algorithm summa or ksplit (panels gathers C through host MPI)");
  if (chosen == "ksplit" && o.comm == "cuda-aware")
    throw InputError("--comm cuda-aware needs --algorithm summa (ksplit sums with NCCL or host MPI)");
  if (chosen != "summa" && o.panel_width != 0) throw InputError("--panel-width needs --algorithm summa");
  if (o.panel_width < 0) throw InputError("--panel-width must be >= 1 (or 0: chosen)");
  return chosen;
}

}  // namespace tessera::job
