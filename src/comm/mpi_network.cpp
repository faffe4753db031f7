#include "comm/mpi_network.hpp"

#include <link.h>
#include <mpi.h>

#include <algorithm>
#include <sstream>

#include "comm/comm.hpp"

namespace tessera::comm {

namespace {

bool shared_memory_btl(const std::string& b) { return b == "vader" || b == "sm" || b == "smcuda"; }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void add_unique(std::vector<std::string>& to, const std::string& name) {
  if (std::find(to.begin(), to.end(), name) == to.end()) to.push_back(name);
}

}  // namespace

std::string MpiComponents::encode() const {
  std::string out = pml + ";";
  for (std::size_t i = 0; i < btls.size(); ++i) out += (i ? "," : "") + btls[i];
  return out;
}

MpiComponents MpiComponents::decode(const std::string& text) {
  MpiComponents c;
  const auto semi = text.find(';');
  c.pml = text.substr(0, semi);
  if (semi == std::string::npos) return c;
  std::stringstream in(text.substr(semi + 1));
  for (std::string b; std::getline(in, b, ',');)
    if (!b.empty()) c.btls.push_back(b);
  return c;
}

namespace {

// Open MPI loads each component as a shared object named mca_<framework>_<component>.so and
// unloads the ones it did not select before MPI_Init returns: the pml and btl objects still
// mapped are the ones carrying messages. Reading the loader's list costs microseconds. Asking
// MPI_T instead (MPI_T_init_thread) made Open MPI 4.1 open every component of every framework to
// register its variables: 0.21-0.23 s per process on the development machine and the H200, one
// of them (mtl psm through libinfinipath) sleeping in its constructor (issue 39).
int note_component(dl_phdr_info* info, std::size_t, void* data) {
  const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const std::string base = path.substr(path.find_last_of('/') + 1);
  auto& found = *static_cast<std::vector<std::string>*>(data);
  if (base.rfind("mca_", 0) == 0 && base.size() > 7 && base.compare(base.size() - 3, 3, ".so") == 0)
    found.push_back(base.substr(4, base.size() - 7));  // "pml_ob1", "btl_vader"
  return 0;
}

}  // namespace

MpiComponents components_of(const std::vector<std::string>& loaded) {
  MpiComponents c;
  std::vector<std::string> pmls;
  for (const auto& name : loaded) {
    for (const char* framework : {"btl_", "pml_"}) {
      if (name.rfind(framework, 0) != 0 || name.size() <= 4) continue;
      const std::string component = name.substr(4);
      if (component == "monitoring") continue;  // a pml/btl interposer, not a transport
      add_unique(framework[0] == 'b' ? c.btls : pmls, component);
    }
  }
  // Open MPI 4.1's btl "sm" is only an old name of vader, and stays loaded beside it.
  const auto sm = std::find(c.btls.begin(), c.btls.end(), "sm");
  if (sm != c.btls.end() && std::find(c.btls.begin(), c.btls.end(), "vader") != c.btls.end()) c.btls.erase(sm);
  // ob1 stays loaded beside ucx or cm only where Open MPI could not unload it: the other is chosen.
  for (const char* chosen : {"ucx", "cm"})
    if (std::find(pmls.begin(), pmls.end(), chosen) != pmls.end()) c.pml = chosen;
  if (c.pml.empty() && std::find(pmls.begin(), pmls.end(), "ob1") != pmls.end()) c.pml = "ob1";
  if (c.pml.empty() && !pmls.empty()) c.pml = pmls.front();
  return c;
}

MpiComponents open_mpi_components() {
  std::vector<std::string> loaded;
#ifdef OPEN_MPI
  dl_iterate_phdr(note_component, &loaded);
#endif
  return components_of(loaded);  // none loaded (not Open MPI, or components built in): pml ""
}

nlohmann::json describe_network(const std::vector<std::string>& hosts, const std::vector<MpiComponents>& ranks) {
  std::vector<std::string> nodes;
  for (const auto& h : hosts) add_unique(nodes, h);
  bool local_peers = false;  // some node holds more than one rank
  for (const auto& n : nodes) local_peers = local_peers || std::count(hosts.begin(), hosts.end(), n) > 1;
  std::vector<std::string> pmls, shared, network;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    add_unique(pmls, ranks[r].pml.empty() ? "unknown" : ranks[r].pml);
    const bool has_peer = std::count(hosts.begin(), hosts.end(), hosts[r]) > 1;
    for (const auto& b : ranks[r].btls) {
      if (b == "self") continue;
      if (shared_memory_btl(b)) {
        if (has_peer) add_unique(shared, b);
      } else {
        add_unique(network, b);
      }
    }
  }
  const std::string pml = joined(pmls);
  std::string between = "none", within = "none";
  if (pml == "unknown") {
    between = nodes.size() > 1 ? "unknown" : "none";
    within = local_peers ? "unknown" : "none";
  } else if (pml != "ob1") {  // ucx, cm: the pml picks its transports itself
    between = nodes.size() > 1 ? pml : "none";
    within = local_peers ? pml : "none";
  } else {
    if (nodes.size() > 1) between = network.empty() ? "none open" : joined(network);
    if (local_peers)
      within = !shared.empty() ? joined(shared) + " (shared memory)" : network.empty() ? "none open" : joined(network);
  }
  return {{"nodes", static_cast<int>(nodes.size())}, {"pml", pml}, {"between_nodes", between}, {"within_node", within}};
}

nlohmann::json job_network(const Comm& comm) {
  const auto hosts = comm.gather(comm.node().host, 0);
  const auto parts = comm.gather(open_mpi_components().encode(), 0);
  nlohmann::json out;
  if (comm.rank() == 0) {
    std::vector<MpiComponents> ranks;
    for (const auto& p : parts) ranks.push_back(MpiComponents::decode(p));
    out = describe_network(hosts, ranks);
  }
  return nlohmann::json::parse(comm.broadcast(out.dump(), 0));
}

namespace {

constexpr int kProbeTag = 29;
constexpr int kLatencyTrips = 200;
constexpr std::size_t kRateBytes = std::size_t{16} << 20;
constexpr int kRateTrips = 4;

// Rank 0 and `peer` exchange `bytes` back and forth `trips` times (after one unmeasured trip);
// the seconds of one trip (there and back), on rank 0.
double ping_pong(const Comm& comm, int peer, std::size_t bytes, int trips) {
  std::vector<char> buffer(bytes);
  double seconds = 0;
  for (int t = -1; t < trips; ++t) {
    const double t0 = MPI_Wtime();
    if (comm.rank() == 0) {
      comm.send_bytes(buffer.data(), bytes, peer, kProbeTag);
      comm.recv_bytes(buffer.data(), bytes, peer, kProbeTag);
    } else {
      comm.recv_bytes(buffer.data(), bytes, 0, kProbeTag);
      comm.send_bytes(buffer.data(), bytes, 0, kProbeTag);
    }
    if (t >= 0) seconds += MPI_Wtime() - t0;
  }
  return seconds / trips;
}

LinkProbe probe_pair(const Comm& comm, int peer, const std::vector<std::string>& hosts) {
  LinkProbe p;
  if (peer < 0) return p;
  p.peer = peer;
  p.host = hosts[0];
  p.peer_host = hosts[static_cast<std::size_t>(peer)];
  if (comm.rank() != 0 && comm.rank() != peer) return p;
  p.latency_seconds = ping_pong(comm, peer, 8, kLatencyTrips) / 2;
  p.bytes_per_s = 2.0 * static_cast<double>(kRateBytes) / ping_pong(comm, peer, kRateBytes, kRateTrips);
  return p;
}

std::string rate_text(double bytes_per_s) {
  return bytes_per_s >= 1e9 ? std::to_string(bytes_per_s / 1e9).substr(0, 5) + " GB/s"
                            : std::to_string(bytes_per_s / 1e6).substr(0, 6) + " MB/s";
}

}  // namespace

NetworkProbe probe_network(const Comm& comm) {
  std::vector<std::string> hosts;
  {
    const auto all = comm.gather(comm.node().host, 0);
    std::string joined;
    for (const auto& h : all) joined += h + "\n";
    std::istringstream in(comm.broadcast(joined, 0));
    for (std::string h; std::getline(in, h);) hosts.push_back(h);
  }
  int other = -1, same = -1;
  for (int r = 1; r < static_cast<int>(hosts.size()); ++r) {
    if (other < 0 && hosts[static_cast<std::size_t>(r)] != hosts[0]) other = r;
    if (same < 0 && hosts[static_cast<std::size_t>(r)] == hosts[0]) same = r;
  }
  NetworkProbe probe;
  probe.between_nodes = probe_pair(comm, other, hosts);
  MPI_Barrier(comm.get());
  probe.within_node = probe_pair(comm, same, hosts);
  MPI_Barrier(comm.get());
  return probe;
}

std::string format_probe(const NetworkProbe& probe) {
  std::string out;
  nlohmann::json keys = nlohmann::json::object();
  const auto line = [&](const char* what, const LinkProbe& p, const char* rate_key, const char* latency_key) {
    if (p.peer < 0) {
      out += std::string("network probe, ") + what + ": no such pair of ranks in this job\n";
      return;
    }
    out += std::string("network probe, ") + what + ": rank 0 (" + p.host + ") <-> rank " + std::to_string(p.peer) +
           " (" + p.peer_host + "): latency " + std::to_string(p.latency_seconds * 1e6).substr(0, 7) + " us, " +
           rate_text(p.bytes_per_s) + " (16 MiB messages)\n";
    keys[rate_key] = p.bytes_per_s;
    if (latency_key != nullptr) keys[latency_key] = p.latency_seconds;
  };
  line("between nodes", probe.between_nodes, "internode_bytes_per_s", "internode_latency_seconds");
  line("within a node", probe.within_node, "network_bytes_per_s", nullptr);
  out += "machine file keys: " + keys.dump() + "\n";
  return out;
}

}  // namespace tessera::comm
