#pragma once
// MPI plumbing, and nothing else: checked calls, node-local placement, error agreement,
// large point-to-point transfers and string gathers. Knows nothing of HDF5 or the GPU.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/watchdog.hpp"
#include "core/error.hpp"

// Every checked MPI call is a wait the watchdog bounds (comm/watchdog.hpp): a rank whose peers are
// gone ends instead of spinning in it forever.
#define TESSERA_MPI_CHECK(call)                                                                                       \
  do {                                                                                                                \
    int tessera_mpi_rc_ = MPI_SUCCESS;                                                                                \
    {                                                                                                                 \
      const ::tessera::comm::MpiWait tessera_mpi_wait_(#call);                                                        \
      tessera_mpi_rc_ = (call);                                                                                       \
    }                                                                                                                 \
    if (tessera_mpi_rc_ != MPI_SUCCESS) ::tessera::comm::throw_mpi_error(#call, __FILE__, __LINE__, tessera_mpi_rc_); \
  } while (0)

namespace tessera::comm {

[[noreturn]] void throw_mpi_error(const char* call, const char* file, int line, int code);

// A failure that every rank of the job has agreed on: the message comes from the lowest
// failing rank (`origin`). main() prints it once, on rank 0, and every rank exits nonzero.
class JobError : public Error {
 public:
  JobError(const std::string& message, int origin) : Error(message), origin_(origin) {}
  int origin() const { return origin_; }

 private:
  int origin_;
};

// This rank's node, as the ranks' host names say (MPI_Get_processor_name, gathered): ranks with
// the same name share a node. Not MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): Open MPI 4.1 builds
// it from PMIx locality data, which under an external PMIx >= 4.2.3 (Ubuntu 24.04's PMIx 5) is
// wrong (open-mpi/ompi#10416, #11585) and across nodes can differ between ranks, so that the ranks
// of two nodes wait for each other in it forever (open-mpi/ompi#9010; docs/cluster.md).
struct NodeInfo {
  std::string host;
  int local_rank = 0;  // rank among the ranks of this node, in world-rank order
  int local_size = 1;
  int index = 0;  // the node's number, in the order of its lowest rank
  int count = 1;  // nodes in the communicator
};

// Whether the MPI library reports, at run time, that it can send and receive GPU memory
// (Open MPI: MPIX_Query_cuda_support() from mpi-ext.h). False where the library cannot tell.
bool mpi_cuda_aware();

// Rank `rank`'s node from every rank's host name (pure: Comm::node() and the unit tests).
NodeInfo node_of(const std::vector<std::string>& hosts, int rank);

// For a failure on one rank while its peers may be waiting for it inside a collective of another
// library (an NCCL group being joined, a device transfer), where they could not reach the error
// agreement of Comm::step: prints "tessera: error (rank r): what" and ends the whole job
// (MPI_Abort, nonzero exit on every rank). Not for errors every rank can agree on.
[[noreturn]] void abort_job(const std::string& what);

class Comm {
 public:
  explicit Comm(MPI_Comm comm);  // borrows comm
  ~Comm();
  Comm(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm& operator=(Comm&&) = delete;

  // Collective: ranks passing the same color form a new communicator (owned, freed on
  // destruction), ordered by rank; color < 0 gets an empty Comm (valid() false).
  Comm split(int color) const;
  bool valid() const { return comm_ != MPI_COMM_NULL; }
  // Collective: the ranks sharing this rank's node (node(), ordered by rank).
  Comm split_node() const;
  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collective the first time (an allgather of host names); then the value kept.
  NodeInfo node() const;

  // Runs `step` on every rank; if it threw on any rank, every rank throws the same JobError
  // carrying the first failing rank's message. Every rank must call it the same number of
  // times: it is a collective (one MPI_Allreduce + one broadcast on failure).
  void step(const std::function<void()>& body) const;

  // Blocking transfers of any size (split into messages of at most 1 GiB, as MPI counts are int).
  void send_bytes(const void* data, std::size_t bytes, int dest, int tag) const;
  void recv_bytes(void* data, std::size_t bytes, int source, int tag) const;
  // Returns once a message from `source` with `tag` has begun to arrive, asking every half
  // millisecond in between: a long wait that leaves this rank's core to its other threads (a
  // blocking receive spins on it).
  void await_message(int source, int tag) const;

  // Many transfers at once, each of any size (messages of at most 1 GiB): every `sends` parcel
  // goes to its peer, every `receives` parcel arrives from its peer, all in flight together (so
  // that no order of the ranks can deadlock); returns when all are done. Parcels between one pair
  // of ranks pair up in order. A parcel to or from this rank itself is not allowed (copy it).
  struct Parcel {
    int peer = 0;
    void* data = nullptr;  // const for sends
    std::size_t bytes = 0;
  };
  void exchange_bytes(const std::vector<Parcel>& sends, const std::vector<Parcel>& receives, int tag) const;

  std::string broadcast(std::string text, int root) const;
  std::vector<std::string> gather(const std::string& text, int root) const;  // filled on root only
  double max(double v) const;
  double min(double v) const;
  double sum(double v) const;
  // Elementwise sum over the ranks, result on every rank.
  void sum_in_place(double* values, std::size_t count) const;

 private:
  Comm() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
  mutable std::optional<NodeInfo> node_;
};

}  // namespace tessera::comm
