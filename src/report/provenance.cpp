#include "report/provenance.hpp"

#include <unistd.h>

#include <cstdlib>

#include "core/version.hpp"

namespace tessera::report {

namespace {

nlohmann::json& process_block() {
  static nlohmann::json block = nlohmann::json::object();
  return block;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

void set_provenance(nlohmann::json block) { process_block() = std::move(block); }

nlohmann::json provenance() {
  nlohmann::json p = process_block();
  if (!p.is_object()) p = nlohmann::json::object();
  p["tessera_version"] = kVersion;
  p["git_id"] = kGitId;
  p["build_type"] = kBuildType;
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
  return p;
}

}  // namespace tessera::report
