// comm/mpi_start: which Open MPI transports tessera asks for before MPI_Init, from the launcher's
// environment. Pure: the environment is a table here.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "comm/mpi_start.hpp"

using Catch::Matchers::ContainsSubstring;
using tessera::comm::choose_transports;
using tessera::comm::LaunchView;

namespace {

std::map<std::string, std::string> g_env;

LaunchView view(std::map<std::string, std::string> env, std::string user_file = "") {
  g_env = std::move(env);
  LaunchView v;
  v.get = [](const char* name) -> const char* {
    const auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
  };
  v.user_mca_params = std::move(user_file);
  return v;
}

}  // namespace

TEST_CASE("every rank on one node: shared memory only", "[comm][mpi_start]") {
  const auto c = choose_transports(view({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  CHECK(c.shared_memory_only);
  CHECK(c.error.empty());
  CHECK_THAT(c.why, ContainsSubstring("2 of 2 ranks on this node"));
  CHECK(choose_transports(view({})).shared_memory_only);  // one process, no launcher
  CHECK(choose_transports(view({{"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_PROCID", "0"}})).shared_memory_only);
}

TEST_CASE("one process without a launcher starts as an isolated singleton", "[comm][mpi_start]") {
  const auto alone = choose_transports(view({}));
  CHECK(alone.isolated_singleton);
  CHECK_THAT(alone.why, ContainsSubstring("without orted"));
  CHECK(choose_transports(view({{"OMPI_MCA_pml", "ucx"}})).isolated_singleton);  // whatever the transports
  CHECK_FALSE(
      choose_transports(view({{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}})).isolated_singleton);
  CHECK_FALSE(choose_transports(view({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_NODES", "1"}})).isolated_singleton);
  CHECK_FALSE(choose_transports(view({{"PMIX_RANK", "0"}})).isolated_singleton);
  CHECK_FALSE(choose_transports(view({{"TESSERA_MPI_TRANSPORTS", "open-mpi"}})).isolated_singleton);
}

TEST_CASE("ranks on several nodes, or an unknown launcher: Open MPI chooses", "[comm][mpi_start]") {
  CHECK_FALSE(
      choose_transports(view({{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})).shared_memory_only);
  CHECK_FALSE(choose_transports(view({{"OMPI_COMM_WORLD_SIZE", "8"}})).shared_memory_only);
  CHECK_FALSE(choose_transports(view({{"SLURM_STEP_NUM_NODES", "2"}})).shared_memory_only);
  CHECK_FALSE(choose_transports(view({{"PMIX_RANK", "0"}})).shared_memory_only);
}

TEST_CASE("a transport the user chose is kept", "[comm][mpi_start]") {
  const std::map<std::string, std::string> one_node = {{"OMPI_COMM_WORLD_SIZE", "1"},
                                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}};
  for (const char* name : {"OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_mtl"}) {
    auto env = one_node;
    env[name] = "ucx";
    const auto c = choose_transports(view(env));
    CHECK_FALSE(c.shared_memory_only);
    CHECK_THAT(c.why, ContainsSubstring(name));
  }
  CHECK_FALSE(choose_transports(view(one_node, "# comment\n  pml = ucx\n")).shared_memory_only);
  CHECK_FALSE(choose_transports(view(one_node, "btl=^openib\n")).shared_memory_only);
  // Comments and other parameters do not count.
  CHECK(choose_transports(view(one_node, "# pml = ucx\nbtl_base_warn_component_unused = 0\n")).shared_memory_only);
  auto cuda_aware = view(one_node);
  cuda_aware.cuda_aware_build = true;  // its GPU transports (smcuda, UCX) carry device memory
  CHECK_FALSE(choose_transports(cuda_aware).shared_memory_only);
  CHECK_THAT(choose_transports(cuda_aware).why, ContainsSubstring("CUDA-aware"));
  auto env = one_node;
  env["TESSERA_MPI_TRANSPORTS"] = "open-mpi";
  CHECK_FALSE(choose_transports(view(env)).shared_memory_only);
  env["TESSERA_MPI_TRANSPORTS"] = "auto";
  CHECK(choose_transports(view(env)).shared_memory_only);
}

TEST_CASE("TESSERA_MPI_TRANSPORTS other than auto or open-mpi is an error", "[comm][mpi_start]") {
  const auto c = choose_transports(view({{"TESSERA_MPI_TRANSPORTS", "shm"}}));
  CHECK_FALSE(c.shared_memory_only);
  CHECK_THAT(c.error, ContainsSubstring("TESSERA_MPI_TRANSPORTS") && ContainsSubstring("'shm'"));
}

TEST_CASE("the launcher's local rank and size, before MPI_Init", "[comm][mpi_start]") {
  const char* names[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                         "SLURM_LOCALID",
                         "SLURM_PROCID",
                         "MPI_LOCALRANKID",
                         "MPI_LOCALNRANKS",
                         "PMI_LOCAL_RANK",
                         "PMIX_RANK",
                         "PMI_RANK",
                         "PMI_SIZE"};
  std::map<std::string, std::string> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved[n] = v;
  for (const char* n : names) ::unsetenv(n);
  CHECK(tessera::comm::launcher_local_rank() == 0);  // one process, no launcher
  CHECK(tessera::comm::launcher_local_size() == 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  CHECK(tessera::comm::launcher_local_rank() == 3);
  CHECK(tessera::comm::launcher_local_size() == 4);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  ::setenv("SLURM_PROCID", "5", 1);
  ::setenv("SLURM_LOCALID", "1", 1);
  CHECK(tessera::comm::launcher_local_rank() == 1);
  CHECK(tessera::comm::launcher_local_size() == 0);  // srun does not say how many share the node
  ::setenv("SLURM_LOCALID", "x", 1);
  CHECK(tessera::comm::launcher_local_rank() == 0);
  for (const char* n : names) ::unsetenv(n);
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
}

// comm::node_of: a rank's node from every rank's host name (what Comm::node() gathers), in place of
// MPI_Comm_split_type, whose Open MPI 4.1 result depends on PMIx locality data (docs/cluster.md).
TEST_CASE("nodes from the ranks' host names", "[comm][nodes]") {
  using tessera::comm::node_of;
  const std::vector<std::string> two_by_two{"node1", "node1", "node2", "node2"};
  CHECK(node_of(two_by_two, 0).local_rank == 0);
  CHECK(node_of(two_by_two, 1).local_rank == 1);
  CHECK(node_of(two_by_two, 2).local_rank == 0);
  CHECK(node_of(two_by_two, 3).local_rank == 1);
  CHECK(node_of(two_by_two, 3).local_size == 2);
  CHECK(node_of(two_by_two, 3).index == 1);
  CHECK(node_of(two_by_two, 3).count == 2);
  CHECK(node_of(two_by_two, 2).host == "node2");
  // Ranks placed round robin (srun --distribution=cyclic): a node's ranks are not contiguous.
  const std::vector<std::string> cyclic{"b", "a", "b", "a", "c"};
  CHECK(node_of(cyclic, 0).index == 0);
  CHECK(node_of(cyclic, 1).index == 1);
  CHECK(node_of(cyclic, 3).local_rank == 1);
  CHECK(node_of(cyclic, 2).local_rank == 1);
  CHECK(node_of(cyclic, 4).local_size == 1);
  CHECK(node_of(cyclic, 4).count == 3);
  CHECK(node_of({"solo"}, 0).local_size == 1);
  CHECK(node_of({"solo"}, 0).count == 1);
}
