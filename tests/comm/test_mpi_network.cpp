// comm/mpi_network: the transports named from the Open MPI components left loaded after MPI_Init,
// and the job's network line made from every rank's. Pure: the loaded objects are a list here
// (test_mpi_network_loaded.cpp asks this process's loader, under MPI).
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "comm/mpi_network.hpp"

using tessera::comm::components_of;
using tessera::comm::describe_network;
using tessera::comm::MpiComponents;

TEST_CASE("components named from loaded objects", "[comm][mpi_network]") {
  const MpiComponents c =
      components_of({"pml_ob1", "btl_self", "btl_vader", "btl_tcp", "coll_tuned", "osc_rdma", "pml_monitoring"});
  CHECK(c.pml == "ob1");
  CHECK(c.btls == std::vector<std::string>{"self", "vader", "tcp"});
  CHECK(components_of({"btl_tcp", "btl_vader", "btl_self", "btl_sm"}).btls ==
        std::vector<std::string>{"tcp", "vader", "self"});                // 4.1's sm: vader's old name, left loaded
  CHECK(components_of({"pml_ob1", "pml_ucx", "btl_self"}).pml == "ucx");  // ob1 left loaded beside ucx
  CHECK(components_of({"pml_cm", "mtl_psm2"}).pml == "cm");
  CHECK(components_of({}).pml.empty());  // not Open MPI, or components built into libmpi
  CHECK(components_of({"coll_tuned"}).pml.empty());
}

TEST_CASE("the network line from every rank's components", "[comm][mpi_network]") {
  const MpiComponents ob1 = components_of({"pml_ob1", "btl_self", "btl_vader", "btl_tcp"});
  const auto one_node = describe_network({"n1", "n1"}, {ob1, ob1});
  CHECK(one_node["nodes"] == 1);
  CHECK(one_node["between_nodes"] == "none");
  CHECK(one_node["within_node"] == "vader (shared memory)");
  const auto two_nodes = describe_network({"n1", "n2"}, {ob1, ob1});
  CHECK(two_nodes["between_nodes"] == "tcp");
  CHECK(two_nodes["within_node"] == "none");
  const auto unknown = describe_network({"n1", "n2"}, {MpiComponents{}, MpiComponents{}});
  CHECK(unknown["pml"] == "unknown");
  CHECK(unknown["between_nodes"] == "unknown");
  const MpiComponents ucx = components_of({"pml_ucx"});
  CHECK(describe_network({"n1", "n1", "n2"}, {ucx, ucx, ucx})["between_nodes"] == "ucx");
  CHECK(MpiComponents::decode(ob1.encode()).btls == ob1.btls);
}
