#include "comm/peers.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifdef TESSERA_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

namespace tessera::comm {

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

#ifdef TESSERA_HAVE_NCCL
// Slowest first: the job's transport is its slowest pair's.
int rank_of(const std::string& transport) {
  if (transport == "NET") return 0;
  if (transport == "SHM") return 1;
  if (transport == "P2P/PCIe") return 2;
  return 3;  // P2P/NVLink
}

// NVML, opened with dlopen (a driver library; no header in every toolkit): whether two GPUs are
// joined by NVLink. False where NVML is missing or cannot tell.
class Nvml {
 public:
  Nvml() {
    lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    init_ = reinterpret_cast<Ret (*)()>(::dlsym(lib_, "nvmlInit_v2"));
    shutdown_ = reinterpret_cast<Ret (*)()>(::dlsym(lib_, "nvmlShutdown"));
    by_pci_ = reinterpret_cast<Ret (*)(const char*, Device*)>(::dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    p2p_ = reinterpret_cast<Ret (*)(Device, Device, int, int*)>(::dlsym(lib_, "nvmlDeviceGetP2PStatus"));
    ok_ = init_ && shutdown_ && by_pci_ && p2p_ && init_() == 0;
  }
  ~Nvml() {
    if (ok_) shutdown_();
    if (lib_) ::dlclose(lib_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool nvlink(const std::string& pci_a, const std::string& pci_b) const {
    Device a = nullptr, b = nullptr;
    int status = -1;
    constexpr int kNvlinkCaps = 2;  // NVML_P2P_CAPS_INDEX_NVLINK; status 0 is NVML_P2P_STATUS_OK
    return ok_ && by_pci_(pci_a.c_str(), &a) == 0 && by_pci_(pci_b.c_str(), &b) == 0 &&
           p2p_(a, b, kNvlinkCaps, &status) == 0 && status == 0;
  }

 private:
  using Ret = int;
  using Device = void*;
  void* lib_ = nullptr;
  Ret (*init_)() = nullptr;
  Ret (*shutdown_)() = nullptr;
  Ret (*by_pci_)(const char*, Device*) = nullptr;
  Ret (*p2p_)(Device, Device, int, int*) = nullptr;
  bool ok_ = false;
};

std::string pci_bus_id(int device) {
  char id[64] = {};
  if (device < 0 || cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return id;
}

// What this process can do towards the GPU with PCI bus id `peer`.
PeerLink link_to(int device, const std::string& mine, const std::string& peer, const Nvml& nvml) {
  PeerLink l;
  int peer_device = -1;
  l.visible = cudaDeviceGetByPCIBusId(&peer_device, peer.c_str()) == cudaSuccess;
  if (!l.visible) {
    (void)cudaGetLastError();
    return l;
  }
  int can = 0;
  l.peer_access = cudaDeviceCanAccessPeer(&can, device, peer_device) == cudaSuccess && can != 0;
  (void)cudaGetLastError();
  l.nvlink = nvml.nvlink(mine, peer);
  return l;
}
#endif

}  // namespace

NcclEnv NcclEnv::from_environment() {
  NcclEnv e;
  e.p2p_disabled = env_set("NCCL_P2P_DISABLE");
  e.shm_disabled = env_set("NCCL_SHM_DISABLE");
  if (const char* level = std::getenv("NCCL_P2P_LEVEL")) e.p2p_level = level;
  return e;
}

std::string nccl_transport(const PeerLink& link, const NcclEnv& env) {
  if (!link.same_host) return "NET";
  const bool p2p = link.visible && link.peer_access && !env.p2p_disabled && env.p2p_level != "LOC";
  if (p2p) return link.nvlink ? "P2P/NVLink" : "P2P/PCIe";
  return env.shm_disabled ? "NET" : "SHM";
}

PeerSurvey survey_peers(const Comm& world, int device) {
  PeerSurvey survey;
#ifdef TESSERA_HAVE_NCCL
  const std::string mine = pci_bus_id(device);
  // Everyone's host and GPU, on every rank.
  const auto all = world.gather(world.node().host + "\n" + mine, 0);
  std::string joined;
  for (const auto& a : all) joined += a + "\n";
  std::istringstream in(world.broadcast(joined, 0));
  std::vector<std::pair<std::string, std::string>> ranks;  // host, pci
  for (std::string host, pci; std::getline(in, host) && std::getline(in, pci);) ranks.emplace_back(host, pci);
  // This rank's view of every other rank on its node (a GPU shared by two ranks is no pair).
  const NcclEnv env = NcclEnv::from_environment();
  nlohmann::json found = nlohmann::json::array();
  // A rank without a GPU (one left idle) sees no pair, and starts no NVML for nothing.
  const std::optional<Nvml> nvml = mine.empty() ? std::nullopt : std::optional<Nvml>(std::in_place);
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    if (r == world.rank() || mine.empty() || ranks[static_cast<std::size_t>(r)].second.empty() ||
        ranks[static_cast<std::size_t>(r)].second == mine)
      continue;
    const bool same_host =
        ranks[static_cast<std::size_t>(r)].first == ranks[static_cast<std::size_t>(world.rank())].first;
    PeerLink l = same_host ? link_to(device, mine, ranks[static_cast<std::size_t>(r)].second, *nvml) : PeerLink{};
    l.same_host = same_host;
    std::string why;
    if (l.same_host && !l.visible)
      why = "its GPU is not visible to this rank (per-task GPU binding such as --gpus-per-task=1)";
    else if (l.same_host && !l.peer_access)
      why = "the GPUs cannot access each other's memory";
    found.push_back({{"peer", r}, {"transport", nccl_transport(l, env)}, {"why", why}});
  }
  // Rank 0 sums up; everyone gets the same survey.
  const auto views = world.gather(found.dump(), 0);
  nlohmann::json out = {{"transport", ""}, {"warnings", nlohmann::json::array()}};
  if (world.rank() == 0) {
    std::string slowest;
    std::vector<std::pair<int, int>> warned;  // each pair once, whichever side saw the problem
    for (std::size_t r = 0; r < views.size(); ++r)
      for (const auto& p : nlohmann::json::parse(views[r])) {
        const std::string t = p["transport"];
        if (slowest.empty() || rank_of(t) < rank_of(slowest)) slowest = t;
        const int a = std::min(static_cast<int>(r), p["peer"].get<int>()),
                  b = std::max(static_cast<int>(r), p["peer"].get<int>());
        if (p["why"].get<std::string>().empty() || std::count(warned.begin(), warned.end(), std::pair{a, b}) > 0)
          continue;
        warned.emplace_back(a, b);
        out["warnings"].push_back("ranks " + std::to_string(a) + " and " + std::to_string(b) +
                                  " share a node but NCCL cannot link their GPUs directly (rank " + std::to_string(r) +
                                  ": " + p["why"].get<std::string>() + "); it goes through host memory (" + t +
                                  "). Give every rank all of the node's GPUs (Slurm: --gpus-per-node with "
                                  "--gpu-bind=none)");
      }
    out["transport"] = slowest;
  }
  out = nlohmann::json::parse(world.broadcast(out.dump(), 0));
  survey.transport = out["transport"];
  for (const auto& w : out["warnings"]) survey.warnings.push_back(w);
#else
  (void)world;
  (void)device;
#endif
  return survey;
}

}  // namespace tessera::comm
