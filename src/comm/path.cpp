#include "comm/path.hpp"

#include "core/error.hpp"
#include "core/words.hpp"

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

std::vector<std::string> path_words() { return {"auto", "host", "cuda-aware", "nccl"}; }

bool int_counts(Path path) { return path != Path::nccl; }

std::optional<Path> parse_path(const std::string& text) {
  for (const Path path : {Path::host, Path::cuda_aware, Path::nccl})
    if (text == path_name(path)) return path;
  if (text != "auto") throw InputError("--comm " + not_one_of(text, path_words()));
  return std::nullopt;
}

namespace {

// A device path asked for by name: taken where the backend is cuda and the path can be used here,
// refused otherwise (`why_not` follows "--comm NAME" in the message).
Path asked_device_path(Path path, bool cuda, bool usable, const char* why_not) {
  if (!cuda) throw InputError("--comm " + path_name(path) + " needs the cuda backend");
  if (!usable) throw InputError("--comm " + path_name(path) + why_not);
  return path;
}

}  // namespace

Path choose_path(std::optional<Path> want, bool cuda, bool nccl, bool cuda_aware) {
  if (want == Path::host) return Path::host;
  if (want == Path::nccl)
    return asked_device_path(Path::nccl, cuda, nccl,
                             " is not available: this build has no NCCL, or two ranks share a GPU (NCCL takes "
                             "one rank per GPU); use --comm auto");
  if (want == Path::cuda_aware)
    return asked_device_path(Path::cuda_aware, cuda, cuda_aware,
                             ": this MPI library does not report CUDA support at run time "
                             "(MPIX_Query_cuda_support); use --comm host or nccl");
  if (cuda && nccl) return Path::nccl;
  if (cuda && cuda_aware) return Path::cuda_aware;
  return Path::host;
}

Path choose_reduce_path(std::optional<Path> want, bool nccl) {
  if (want == Path::nccl && !nccl)
    throw InputError(
        "--comm nccl is not available to ksplit: the backend is not cuda with NCCL, or two ranks share "
        "a GPU; use --comm auto or host");
  return nccl && want != Path::host ? Path::nccl : Path::host;
}

}  // namespace tessera::comm
