#include "comm/mpi_start.hpp"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_CUDA_AWARE_SUPPORT
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::comm {

namespace {

TransportChoice g_choice;

bool has(const LaunchView& v, const char* name) {
  const char* value = v.get(name);
  return value != nullptr && *value != '\0';
}

std::string value_of(const LaunchView& v, const char* name) {
  const char* value = v.get(name);
  return value != nullptr ? value : "";
}

// Whether the MCA parameter file's text sets one of the transport frameworks (a line
// "pml = ...", "btl=...", "mtl = ..." that is not a comment).
bool file_sets_transports(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(first, eq - first);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key == "pml" || key == "btl" || key == "mtl") return true;
  }
  return false;
}

bool no_launcher(const LaunchView& v) {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_NODES", "SLURM_PROCID", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (has(v, name)) return false;
  return true;
}

// True when every rank of this job is on this node, as far as the launcher says before MPI_Init.
bool one_node(const LaunchView& v, std::string& how) {
  if (has(v, "OMPI_COMM_WORLD_SIZE")) {  // mpirun (Open MPI's launcher)
    const std::string size = value_of(v, "OMPI_COMM_WORLD_SIZE"), local = value_of(v, "OMPI_COMM_WORLD_LOCAL_SIZE");
    how = "mpirun: " + local + " of " + size + " ranks on this node";
    return !local.empty() && local == size;
  }
  if (has(v, "SLURM_STEP_NUM_NODES")) {  // srun
    const std::string nodes = value_of(v, "SLURM_STEP_NUM_NODES");
    how = "srun: " + nodes + " node(s)";
    return nodes == "1";
  }
  if (!no_launcher(v)) {  // another launcher
    how = "launcher does not say how many nodes";
    return false;
  }
  how = "one process, no launcher";
  return true;
}

// Whether to ask for ob1 over shared memory (`shm`), and why, unless something chose already.
std::string transports_why(const LaunchView& v, bool& shm) {
  for (const char* name : {"OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_mtl"})
    if (has(v, name)) return std::string("Open MPI's choice (") + name + " is set)";
  if (v.cuda_aware_build) return "Open MPI's choice (a CUDA-aware build: its GPU transports are kept)";
  if (file_sets_transports(v.user_mca_params))
    return "Open MPI's choice (~/.openmpi/mca-params.conf sets pml, btl or mtl)";
  std::string how;
  shm = one_node(v, how);
  return shm ? "shared memory only (ob1, self+vader): " + how : "Open MPI's choice (" + how + ")";
}

// The value of `name` as a count in [min, 2^20), or -1 where it is missing or not a count.
int count_of(const LaunchView& v, const char* name, long min) {
  const std::string text = value_of(v, name);
  if (text.empty()) return -1;
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  return *end == '\0' && n >= min && n < (1L << 20) ? static_cast<int>(n) : -1;
}

LaunchView process_view() {
  LaunchView view;
  view.get = [](const char* name) -> const char* { return std::getenv(name); };
  return view;
}

}  // namespace

TransportChoice choose_transports(const LaunchView& v) {
  TransportChoice c;
  const std::string mode = value_of(v, "TESSERA_MPI_TRANSPORTS");
  if (!mode.empty() && mode != "auto" && mode != "open-mpi") {
    c.error = "TESSERA_MPI_TRANSPORTS must be auto or open-mpi, not '" + mode + "'";
    c.why = "Open MPI's choice (TESSERA_MPI_TRANSPORTS not understood)";
    return c;
  }
  if (mode == "open-mpi") {
    c.why = "Open MPI's choice (TESSERA_MPI_TRANSPORTS=open-mpi)";
    return c;
  }
  c.isolated_singleton = no_launcher(v);
  c.why = transports_why(v, c.shared_memory_only) + (c.isolated_singleton ? ", started without orted" : "");
  return c;
}

void prepare_mpi_start() {
#ifdef OPEN_MPI
  LaunchView view = process_view();
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  view.cuda_aware_build = true;
#endif
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::ifstream in(std::string(home) + "/.openmpi/mca-params.conf");
    std::ostringstream text;
    text << in.rdbuf();
    view.user_mca_params = text.str();
  }
  g_choice = choose_transports(view);
  if (g_choice.shared_memory_only) {
    ::setenv("OMPI_MCA_pml", "ob1", 0);
    ::setenv("OMPI_MCA_btl", "self,vader", 0);
  }
  if (g_choice.isolated_singleton) ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
#else
  g_choice.why = "the MPI library's choice (not Open MPI)";
#endif
}

int launcher_local_rank() {
  const LaunchView v = process_view();
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    if (const int rank = count_of(v, name, 0); rank >= 0) return rank;
  return 0;
}

int launcher_local_size() {
  const LaunchView v = process_view();
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (has(v, name)) return std::max(count_of(v, name, 1), 0);
  return no_launcher(v) ? 1 : 0;  // one process, or a launcher that does not say
}

const TransportChoice& mpi_start_choice() { return g_choice; }

}  // namespace tessera::comm
