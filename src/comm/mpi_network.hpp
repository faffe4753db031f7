#pragma once
// What carried the job's MPI messages between nodes and within a node, as Open MPI itself left it
// after MPI_Init: the components still loaded then (Open MPI unloads those it did not select),
// read from the dynamic loader's list of shared objects, which costs nothing (MPI_T, asked before,
// made Open MPI load every component: 0.2 s a process). An Open MPI built with its components
// inside libmpi (--disable-dlopen) shows none: the pml is then "unknown". With the point-to-point
// layer ob1, a message to a rank of another node goes over a network BTL (tcp, openib, ofi, uct),
// one to a rank of the same node over the shared-memory BTL (vader, sm) where it is open; ucx and
// cm carry both themselves. tessera's own part is only the choice made before MPI_Init
// (comm/mpi_start.hpp), which never restricts a job whose ranks span nodes.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::comm {

class Comm;

// This process's loaded components: the pml ("" where the loader cannot tell: not Open MPI, or components built into
// libmpi), the BTLs.
struct MpiComponents {
  std::string pml;
  std::vector<std::string> btls;
  std::string encode() const;  // "pml;btl,btl"
  static MpiComponents decode(const std::string& text);
};
MpiComponents open_mpi_components();
// Pure: the components named by the base names of loaded objects without "mca_" and ".so"
// ("pml_ob1", "btl_vader", "coll_tuned", ...); other frameworks are ignored.
MpiComponents components_of(const std::vector<std::string>& loaded);

// Pure: the job's network from every rank's host and components (rank order):
// {"nodes": N, "pml": "ob1", "between_nodes": "tcp", "within_node": "vader (shared memory)"};
// a side that no pair of ranks used says "none" (one node: between_nodes; one rank per node:
// within_node), "unknown" where the components could not be told.
nlohmann::json describe_network(const std::vector<std::string>& hosts, const std::vector<MpiComponents>& ranks);

// Collective: describe_network of this communicator's ranks, the same value on every rank.
nlohmann::json job_network(const Comm& comm);

// One pair of ranks measured by ping-pong: an 8-byte message's one-way time, and the rate of
// 16 MiB messages (each way in turn). `peer` < 0: no such pair in the job.
struct LinkProbe {
  int peer = -1;
  std::string host, peer_host;
  double latency_seconds = 0, bytes_per_s = 0;
};
struct NetworkProbe {
  LinkProbe between_nodes;  // rank 0 and the first rank of another node
  LinkProbe within_node;    // rank 0 and the first other rank of its node
};
// Collective (`tessera info --probe-network`): rank 0 measures both pairs, one after the other,
// while the other ranks wait; the result on rank 0.
NetworkProbe probe_network(const Comm& comm);
// The probe as text, ending with the machine file keys it measured (algorithms/machine.hpp):
// internode_bytes_per_s, internode_latency_seconds, network_bytes_per_s.
std::string format_probe(const NetworkProbe& probe);

}  // namespace tessera::comm
