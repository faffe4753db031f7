#include "comm/path.hpp"

#include "core/error.hpp"

namespace tessera::comm {

std::string path_name(Path path) {
  switch (path) {
    case Path::host:
      return "host";
    case Path::cuda_aware:
      return "cuda-aware";
    case Path::nccl:
      return "nccl";
  }
  return "host";
}

bool nccl_compiled() {
#ifdef TESSERA_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

bool int_counts(Path path) { return path != Path::nccl; }

Path choose_path(const std::string& want, bool cuda, bool nccl, bool cuda_aware) {
  if (want == "host") return Path::host;
  if (want == "nccl") {
    if (!cuda) throw InputError("--comm nccl needs the cuda backend");
    if (!nccl)
      throw InputError(
          "--comm nccl is not available: this build has no NCCL, or two ranks share a GPU (NCCL takes "
          "one rank per GPU); use --comm auto");
    return Path::nccl;
  }
  if (want == "cuda-aware") {
    if (!cuda) throw InputError("--comm cuda-aware needs the cuda backend");
    if (!cuda_aware)
      throw InputError(
          "--comm cuda-aware: this MPI library does not report CUDA support at run time "
          "(MPIX_Query_cuda_support); use --comm host or nccl");
    return Path::cuda_aware;
  }
  if (want != "auto") throw InputError("invalid --comm '" + want + "' (choose: auto, host, cuda-aware, nccl)");
  if (cuda && nccl) return Path::nccl;
  if (cuda && cuda_aware) return Path::cuda_aware;
  return Path::host;
}

Path choose_reduce_path(const std::string& want, bool nccl) {
  if (want == "nccl" && !nccl)
    throw InputError(
        "--comm nccl is not available to ksplit: the backend is not cuda with NCCL, or two ranks share "
        "a GPU; use --comm auto or host");
  return nccl && want != "host" ? Path::nccl : Path::host;
}

}  // namespace tessera::comm
