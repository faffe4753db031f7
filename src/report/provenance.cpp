#include "report/provenance.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "core/git_id.hpp"
#include "core/version.hpp"

extern char** environ;  // NOLINT: POSIX

namespace tessera::report {

namespace {

nlohmann::json& process_block() {
  static nlohmann::json block = nlohmann::json::object();
  return block;
}

nlohmann::json& typed_options() {
  static nlohmann::json typed = nlohmann::json::object();
  return typed;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Variables reported by their whole name.
constexpr std::array kExactNames = {
    // Open MPI's launcher, PMIx, MPICH's Hydra
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_UNIVERSE_SIZE", "OMPI_MCA_orte_num_nodes", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    // Slurm: the job, its step and this task
    "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_JOB_PARTITION", "SLURM_CLUSTER_NAME", "SLURM_JOB_NUM_NODES",
    "SLURM_JOB_NODELIST", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_CPUS_PER_TASK",
    "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK", "SLURM_GPUS_ON_NODE", "SLURM_STEP_ID",
    "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID", "SLURM_CPU_BIND", "SLURM_MPI_TYPE",
    // devices, threads, HDF5
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS", "OMP_PROC_BIND", "OPENBLAS_NUM_THREADS",
    "HDF5_PLUGIN_PATH", "HDF5_PLUGIN_PRELOAD", "HDF5_USE_FILE_LOCKING"};

// Variables reported by their prefix: tessera's own, and the tuning of MPI's transports, UCX
// and NCCL (what a user sets; not the launcher's internal OMPI_MCA_orte_*, PMIX_* wiring).
constexpr std::array kPrefixes = {"TESSERA_",     "OMPI_MCA_pml",       "OMPI_MCA_btl", "OMPI_MCA_mtl", "OMPI_MCA_coll",
                                  "OMPI_MCA_osc", "OMPI_MCA_opal_cuda", "UCX_",         "NCCL_"};

constexpr std::size_t kMaxValue = 256;

}  // namespace

bool reported_variable(const std::string& name) {
  if (std::find(kExactNames.begin(), kExactNames.end(), std::string_view(name)) != kExactNames.end()) return true;
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](const char* prefix) { return name.rfind(prefix, 0) == 0; });
}

nlohmann::json environment_in_force() {
  nlohmann::json vars = nlohmann::json::object();  // sorted by name
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(entry.substr(0, eq));
    if (!reported_variable(name)) continue;
    std::string value(entry.substr(eq + 1));
    if (value.size() > kMaxValue) value = value.substr(0, kMaxValue - 3) + "...";
    vars[name] = value;
  }
  return vars;
}

std::string utc_timestamp_ns(std::int64_t seconds, std::int64_t nanoseconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:09d}Z", buf, nanoseconds);
}

nlohmann::json to_json(const InputRecord& r) {
  return {{"role", r.role},
          {"reference", r.reference},
          {"file", r.file},
          {"size_bytes", r.size_bytes},
          {"modified", utc_timestamp_ns(r.modified_seconds, r.modified_nanoseconds)},
          {"shape", {r.rows, r.cols}},
          {"dtype", r.stored_type},
          {"layout", r.layout},
          {"chunk", r.chunk.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.chunk)},
          {"filters", r.filters}};
}

void set_provenance(nlohmann::json block) { process_block() = std::move(block); }

void set_typed_options(nlohmann::json typed) { typed_options() = std::move(typed); }

nlohmann::json provenance() {
  nlohmann::json p = process_block();
  if (!p.is_object()) p = nlohmann::json::object();
  p["tessera_version"] = kVersion;
  p["git_id"] = kGitId;
  p["build_type"] = kBuildType;
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  p["working_directory"] = ec ? nlohmann::json(nullptr) : nlohmann::json(cwd.string());
  p["environment"] = environment_in_force();
  if (!p.contains("slurm_job_id")) {
    const std::string job = env_or_empty("SLURM_JOB_ID");
    p["slurm_job_id"] = job.empty() ? nlohmann::json(nullptr) : nlohmann::json(job);
  }
  if (!p.contains("hosts")) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    p["hosts"] = {std::string(host)};
  }
  for (const char* key : {"command_line", "options", "libraries", "gpus"})
    if (!p.contains(key))
      p[key] = std::string(key) == "options" || std::string(key) == "libraries" ? nlohmann::json::object()
                                                                                : nlohmann::json::array();
  for (auto& [name, value] : p["options"].items())
    if (typed_options().contains(name)) value = typed_options()[name];
  return p;
}

}  // namespace tessera::report
