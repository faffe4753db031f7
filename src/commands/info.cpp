#include "commands/info.hpp"

#include "commands/provenance.hpp"
#include "report/provenance.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "backend/backend.hpp"
#include "comm/mpi_start.hpp"
#include "core/git_id.hpp"
#include "core/version.hpp"
#include "io/hdf5_io.hpp"
#include "kernels/cpu_gemm.hpp"

namespace tessera::commands {

nlohmann::json kernels_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const backend::KernelInfo& k : backend::kernel_catalog())
    list.push_back({{"backend", backend::kind_name(k.backend)},
                    {"name", k.name},
                    {"dtypes", k.dtypes},
                    {"opt_in", k.opt_in},
                    {"vendor", k.vendor},
                    {"needs", k.needs},
                    {"summary", k.summary}});
  return list;
}

nlohmann::json collect_info(const comm::Comm& comm) {
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  std::string mpi(mpi_version);  // len may count a trailing NUL
  if (auto nl = mpi.find('\n'); nl != std::string::npos) mpi.resize(nl);
  while (!mpi.empty() && (mpi.back() == ',' || mpi.back() == ' ')) mpi.pop_back();
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  const auto node = comm.node();

  nlohmann::json slurm = nlohmann::json::object();
  for (const char* var : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_STEP_GPUS",
                          "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"})
    if (const char* v = std::getenv(var)) slurm[var] = v;

  return {{"schema", report::kInfoSchema},
          {"version", kVersion},
          {"git_id", kGitId},
          {"libraries", library_versions()},
          {"backends", backend::compiled_backends()},
          {"kernels", kernels_json()},
          {"mpi",
           {{"library", mpi},
            {"standard", fmt::format("{}.{}", major, minor)},
            {"world_size", comm.size()},
            {"rank", comm.rank()},
            {"host", node.host},
            {"local_rank", node.local_rank},
            {"local_size", node.local_size},
            {"transports", comm::mpi_start_choice().why}}},
          {"hdf5", {{"version", io::library_version()}, {"parallel", io::library_is_parallel()}}},
          {"blas",
           {{"library", kernels::blas_name()},
            {"config", kernels::openblas_config_string()},
            {"threads", kernels::openblas_threads()}}},
          {"gpus", backend::describe_gpus()},
          {"environment", slurm}};
}

std::string format_info(const nlohmann::json& i) {
  std::string out = fmt::format("tessera {} ({})\n", i["version"].get<std::string>(), i.value("git_id", "unknown"));
  std::string backends;
  for (const auto& b : i["backends"]) backends += (backends.empty() ? "" : ", ") + b.get<std::string>();
  out += fmt::format("  backends : {}\n", backends);
  for (const auto& k : i.value("kernels", nlohmann::json::array())) {
    std::string notes = k["backend"].get<std::string>();
    for (const auto& d : k["dtypes"]) notes += " " + d.get<std::string>();
    if (k["opt_in"].get<bool>()) notes += ", opt-in";
    for (const auto& n : k["needs"]) notes += ", needs " + n.get<std::string>();
    out += fmt::format("  kernel   : {:<34} {}\n", k["name"].get<std::string>(), notes);
  }
  out +=
      fmt::format("  MPI      : {} (MPI {}), {} rank(s); this is rank {} on {} (local {} of {})\n",
                  i["mpi"]["library"].get<std::string>(), i["mpi"]["standard"].get<std::string>(),
                  i["mpi"]["world_size"].get<int>(), i["mpi"]["rank"].get<int>(), i["mpi"]["host"].get<std::string>(),
                  i["mpi"]["local_rank"].get<int>(), i["mpi"]["local_size"].get<int>());
  out += fmt::format("  transport: {}\n", i["mpi"].value("transports", std::string("?")));
  out += fmt::format("  HDF5     : {} ({})\n", i["hdf5"]["version"].get<std::string>(),
                     i["hdf5"]["parallel"].get<bool>() ? "parallel" : "serial");
  out += fmt::format("  BLAS     : {}, {} thread(s): {}\n", i["blas"]["library"].get<std::string>(),
                     i["blas"]["threads"].get<int>(), i["blas"]["config"].get<std::string>());
  // The compressions tessera does itself (C written, inputs read, on its threads; no plugin).
  std::string codecs;
  for (const char* codec : {"gzip", "lz4", "zstd"}) {
    const nlohmann::json& lib = i["libraries"].value(codec, nlohmann::json());
    codecs += fmt::format("{}{} ({})", codecs.empty() ? "" : ", ", codec,
                          lib.is_string() ? lib.get<std::string>() : "not built: HDF5's plugin");
  }
  out += fmt::format("  codecs   : {}\n", codecs);
  if (i["gpus"].empty())
    out += "  GPUs     : none visible\n";
  else
    for (const auto& g : i["gpus"]) out += fmt::format("  GPU      : {}\n", g.get<std::string>());
  for (const auto& [k, v] : i["environment"].items()) out += fmt::format("  {:<22} = {}\n", k, v.get<std::string>());
  return out;
}

}  // namespace tessera::commands
