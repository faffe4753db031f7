#include "commands/provenance.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "io/hdf5_io.hpp"
#include "kernels/cpu_gemm.hpp"

#ifdef TESSERA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tessera::commands {

namespace {

nlohmann::json or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text);
  if (const auto nl = v.find('\n'); nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == ',' || v.back() == ' ')) v.pop_back();
  return v;
}

// NCCL as loaded into this process (tessera links it where built with it): asked through
// ncclGetVersion without linking NCCL here.
std::string nccl_version() {
  void* lib = ::dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return "";
  std::string out;
  using GetVersion = int (*)(int*);
  if (auto get = reinterpret_cast<GetVersion>(::dlsym(lib, "ncclGetVersion"))) {
    int code = 0;
    if (get(&code) == 0 && code > 0)
      out = code >= 10000 ? fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
                          : fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  }
  ::dlclose(lib);
  return out;
}

#ifdef TESSERA_HAVE_CUDA
std::string cuda_version_text(int v) { return v > 0 ? fmt::format("{}.{}", v / 1000, v % 1000 / 10) : ""; }

#endif

}  // namespace

nlohmann::json library_versions() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  std::string runtime, driver;
#ifdef TESSERA_HAVE_CUDA
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) runtime = cuda_version_text(v);
  v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) driver = cuda_version_text(v);
  (void)cudaGetLastError();
#endif
  return {{"mpi", or_null(mpi_library())},
          {"mpi_standard", fmt::format("{}.{}", major, minor)},
          {"hdf5", or_null(io::library_version())},
          {"blas", or_null(kernels::blas_name())},
          {"blas_config", or_null(kernels::openblas_config_string())},
          {"cuda_runtime", or_null(runtime)},
          {"cuda_driver", or_null(driver)},
          {"nccl", or_null(nccl_version())},
          {"gzip", or_null(io::compression_library("gzip"))},
          {"lz4", or_null(io::compression_library("lz4"))},
          {"zstd", or_null(io::compression_library("zstd"))}};
}

nlohmann::json visible_gpus() {
  nlohmann::json gpus = nlohmann::json::array();
#ifdef TESSERA_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    const backend::DeviceIdentity id = backend::gpu_identity(d);
    gpus.push_back(
        {{"id", d}, {"name", prop.name}, {"uuid", or_null(id.uuid)}, {"pci_bus_id", or_null(id.pci_bus_id)}});
  }
  (void)cudaGetLastError();
#endif
  return gpus;
}

nlohmann::json collect_provenance(const std::vector<std::string>& argv, const nlohmann::json& options, bool list_gpus) {
  nlohmann::json p = {{"command_line", argv}, {"options", options}, {"libraries", library_versions()}};
  const char* job = std::getenv("SLURM_JOB_ID");
  p["slurm_job_id"] = job ? nlohmann::json(std::string(job)) : nlohmann::json(nullptr);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);  // as the report's ranks name their hosts; not collective
  p["hosts"] = {std::string(host, static_cast<std::size_t>(len))};
  if (list_gpus)
    p["devices"] = nlohmann::json::array({{{"rank", 0}, {"host", p["hosts"][0]}, {"gpus", visible_gpus()}}});
  return p;
}

nlohmann::json typed_options(const BenchOptions& o) {
  return {{"backend", o.backend}, {"sizes", o.sizes},     {"dtypes", o.dtypes}, {"kernels", o.kernels},
          {"warmup", o.warmup},   {"repeats", o.repeats}, {"seed", o.seed},     {"json", o.json_path},
          {"csv", o.csv_path},    {"config", o.config}};
}

}  // namespace tessera::commands
