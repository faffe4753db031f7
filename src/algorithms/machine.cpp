#include "algorithms/machine.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace tessera::algorithms {
namespace {

// Every key of the machine file and the field it sets.
struct Fields {
  std::map<std::string, double MachineModel::*> rates;
  std::map<std::string, std::int64_t MachineModel::*> bytes;
};

const Fields& fields() {
  static const Fields f{{{"read_bytes_per_s", &MachineModel::read_bytes_per_s},
                         {"write_bytes_per_s", &MachineModel::write_bytes_per_s},
                         {"durable_write_bytes_per_s", &MachineModel::durable_write_bytes_per_s},
                         {"startup_seconds", &MachineModel::startup_seconds},
                         {"nccl_group_seconds", &MachineModel::nccl_group_seconds},
                         {"multi_gpu_seconds", &MachineModel::multi_gpu_seconds},
                         {"page_lock_bytes_per_s", &MachineModel::page_lock_bytes_per_s},
                         {"durable_write_bytes_per_s_one_rank", &MachineModel::durable_write_bytes_per_s_one_rank},
                         {"h2d_bytes_per_s", &MachineModel::h2d_bytes_per_s},
                         {"d2h_bytes_per_s", &MachineModel::d2h_bytes_per_s},
                         {"network_bytes_per_s", &MachineModel::network_bytes_per_s},
                         {"device_link_bytes_per_s", &MachineModel::device_link_bytes_per_s},
                         {"internode_bytes_per_s", &MachineModel::internode_bytes_per_s},
                         {"internode_latency_seconds", &MachineModel::internode_latency_seconds},
                         {"gpu_flops_f32", &MachineModel::gpu_flops_f32},
                         {"gpu_flops_f64", &MachineModel::gpu_flops_f64},
                         {"cpu_flops_f32", &MachineModel::cpu_flops_f32},
                         {"cpu_flops_f64", &MachineModel::cpu_flops_f64},
                         {"gzip_bytes_per_s_per_thread", &MachineModel::gzip_bytes_per_s_per_thread},
                         {"lz4_bytes_per_s", &MachineModel::lz4_bytes_per_s},
                         {"zstd_bytes_per_s_per_thread", &MachineModel::zstd_bytes_per_s_per_thread},
                         {"bzip2_bytes_per_s", &MachineModel::bzip2_bytes_per_s}},
                        {{"host_overhead_bytes", &MachineModel::host_overhead_bytes},
                         {"gpu_host_overhead_bytes", &MachineModel::gpu_host_overhead_bytes},
                         {"nccl_gpu_bytes_per_comm", &MachineModel::nccl_gpu_bytes_per_comm},
                         {"nccl_host_bytes_per_comm", &MachineModel::nccl_host_bytes_per_comm},
                         {"nccl_p2p_receive_gpu_bytes", &MachineModel::nccl_p2p_receive_gpu_bytes}}};
  return f;
}

// configs/machines of the working directory, then of the installation this code runs from.
std::vector<std::filesystem::path> machine_dirs() {
  std::vector<std::filesystem::path> dirs{"configs/machines"};
  char exe[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) dirs.push_back(std::filesystem::path(exe).parent_path().parent_path() / "share/tessera/configs/machines");
  static const int anchor = 0;
  Dl_info info{};
  if (dladdr(&anchor, &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] == '/')
    dirs.push_back(std::filesystem::path(info.dli_fname).parent_path().parent_path() /
                   "share/tessera/configs/machines");
  dirs.push_back(std::filesystem::path(kInstallDataDir) / "configs/machines");
  return dirs;
}

MachineModel read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the machine file '" + path.string() + "'");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw InputError("the machine file '" + path.string() + "' is not JSON");
  MachineModel m = MachineModel::from_json(j, path.string());
  m.source = path.string();
  return m;
}

}  // namespace

MachineModel MachineModel::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError("machine file '" + where + "': expected a JSON object");
  MachineModel m;
  for (const auto& [key, value] : j.items()) {
    if (key == "name" && value.is_string()) {
      m.name = value.get<std::string>();
      continue;
    }
    if (key == "comment" || key == "measured") continue;  // for people
    if (key == "match") {
      const bool ok = value.is_object() && value.size() == 2 && value.contains("gpu") && value["gpu"].is_string() &&
                      !value["gpu"].get<std::string>().empty() && value.contains("gpus") &&
                      value["gpus"].is_number_integer() && value["gpus"].get<int>() > 0;
      if (!ok)
        throw InputError("machine file '" + where +
                         "': 'match' must be {\"gpu\": part of the GPU's name, \"gpus\": their count}");
      continue;
    }
    const auto& f = fields();
    const bool number = value.is_number() && value.get<double>() > 0;
    if (const auto r = f.rates.find(key); r != f.rates.end() && number) {
      m.*(r->second) = value.get<double>();
    } else if (const auto b = f.bytes.find(key); b != f.bytes.end() && number) {
      m.*(b->second) = static_cast<std::int64_t>(value.get<double>());
    } else {
      throw InputError("machine file '" + where + "': '" + key + "' is not a known key with a positive number");
    }
  }
  return m;
}

nlohmann::json MachineModel::to_json() const {
  nlohmann::json j{{"name", name}};
  for (const auto& [key, field] : fields().rates) j[key] = this->*field;
  for (const auto& [key, field] : fields().bytes) j[key] = this->*field;
  return j;
}

bool MachineModel::matches(const nlohmann::json& match, const GpuNode& gpus) {
  if (!match.is_object() || gpus.count <= 0 || !match.contains("gpu") || !match.contains("gpus")) return false;
  return match["gpu"].is_string() && gpus.model.find(match["gpu"].get<std::string>()) != std::string::npos &&
         match["gpus"].is_number_integer() && match["gpus"].get<int>() == gpus.count;
}

MachineModel MachineModel::load(const std::string& wanted, const GpuNode& gpus) {
  std::string name = wanted;
  if (name.empty())
    if (const auto file = env::word("TESSERA_MACHINE_FILE")) name = *file;
  if (name.empty() && gpus.count > 0)
    for (const auto& dir : machine_dirs()) {
      std::error_code ec;
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        std::ifstream in(file);
        const auto j = nlohmann::json::parse(in, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("match") && matches(j["match"], gpus))
          return read_file(file);
      }
    }
  const bool is_path =
      name.find('/') != std::string::npos || (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
  if (is_path) return read_file(name);
  const std::string file = (name.empty() ? std::string("default") : name) + ".json";
  for (const auto& dir : machine_dirs())
    if (std::error_code ec; std::filesystem::is_regular_file(dir / file, ec)) return read_file(dir / file);
  if (!name.empty() && name != "default")
    throw InputError("no machine file '" + file + "' in configs/machines (here or installed); pass a path");
  MachineModel built_in;  // default.json holds the same numbers: "default" works where it is not found
  if (!name.empty()) built_in.name = name;
  return built_in;
}

}  // namespace tessera::algorithms
