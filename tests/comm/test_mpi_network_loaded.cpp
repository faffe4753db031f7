// comm/mpi_network under MPI: this process's components, read from the loader after MPI_Init,
// without MPI_T's cost (0.21-0.23 s a process, issue 39).
#include <catch2/catch_test_macros.hpp>

#include <chrono>

#include "comm/comm.hpp"
#include "comm/mpi_network.hpp"

TEST_CASE("this process's components: read in well under a millisecond", "[comm][mpi_network][mpi]") {
  const auto t0 = std::chrono::steady_clock::now();
  const tessera::comm::MpiComponents mine = tessera::comm::open_mpi_components();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 0.01);  // MPI_T_init_thread took 0.21-0.23 s here (issue 39)
#ifdef OPEN_MPI
  CHECK(!mine.pml.empty());  // Open MPI as Debian builds it: components are shared objects
  CHECK(!mine.btls.empty());
#endif
}

TEST_CASE("the job's network: the same value on every rank, quickly", "[comm][mpi_network][mpi]") {
  const tessera::comm::Comm world(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  const auto net = tessera::comm::job_network(world);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 0.05);
  CHECK(net["nodes"] == 1);
  CHECK(net["between_nodes"] == "none");
  if (world.size() > 1) CHECK(net["within_node"] != "none");
}
