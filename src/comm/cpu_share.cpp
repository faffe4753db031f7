#include "comm/cpu_share.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::comm {

namespace {

std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; empty on anything else.
std::vector<int> parse_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (part.empty() || part == "\n") continue;
    const auto dash = part.find('-');
    try {
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return cpus;
}

// The cores this process may be given: its cgroup's cpuset (a batch system's allocation), else
// every online core.
std::vector<int> usable_cpus() {
  std::ifstream cgroup("/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    if (line.rfind("0::", 0) != 0) continue;  // cgroup v2
    std::ifstream eff("/sys/fs/cgroup" + line.substr(3) + "/cpuset.cpus.effective");
    std::string text;
    if (std::getline(eff, text)) {
      auto cpus = parse_list(text);
      if (!cpus.empty()) return cpus;
    }
  }
  std::vector<int> all;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < online && c < CPU_SETSIZE; ++c) all.push_back(c);
  return all;
}

std::string list_text(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<int> cpu_slice(const std::vector<int>& cpus, int local_rank, int local_size) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size || cpus.empty()) return {};
  const auto n = static_cast<int>(cpus.size());
  if (n < local_size) return {cpus[static_cast<std::size_t>(local_rank % n)]};  // more ranks than cores
  const int base = n / local_size, extra = n % local_size;
  const int first = local_rank * base + std::min(local_rank, extra);
  const int count = base + (local_rank < extra ? 1 : 0);
  return {cpus.begin() + first, cpus.begin() + first + count};
}

CpuShare widen_cpu_binding(const Comm& world) {
  CpuShare share;
  const std::vector<int> bound = affinity();
  share.before = share.after = static_cast<int>(bound.size());
  const NodeInfo node = world.node();
  const char* keep = std::getenv("TESSERA_KEEP_BINDING");
  if (bound.empty() || (keep != nullptr && std::string(keep) == "1")) return share;
  const std::vector<int> mine = cpu_slice(usable_cpus(), node.local_rank, node.local_size);
  if (mine.size() <= bound.size()) return share;  // the launcher already gave this rank its share, or more
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int c : mine) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) return share;
  share.after = static_cast<int>(mine.size());
  share.note = "the launcher bound this rank to " + std::to_string(bound.size()) + " core" +
               (bound.size() == 1 ? "" : "s") + " (" + list_text(bound) + "); tessera gave it its share of the node, " +
               std::to_string(mine.size()) + " cores (" + list_text(mine) + "), for its threads (BLAS, reading, " +
               "writing). TESSERA_KEEP_BINDING=1 keeps the launcher's binding; `mpirun --bind-to none` avoids it";
  return share;
}

}  // namespace tessera::comm
