#pragma once
// One rank's member of an NCCL communicator, and its set-up, written once for every group a
// path needs (summa's grid rows, grid columns and gather; ksplit's sum). Internal to the comm
// layer; compiled only with NCCL.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "comm/exchange.hpp"
#include "core/dtype.hpp"

namespace tessera::comm {

class NcclGroup {
 public:
  // What a group is warmed up for (NCCL connects peers on first use: done while joining, not
  // inside the timed run): broadcasts and sends to member 0, sums onto member 0, or sums scattered.
  enum class Use { broadcast_and_gather, reduce, reduce_scatter };

  // Collective over `world`, every rank calling it in the same order: the `members` (nullptr on
  // ranks that are not) form a group on `device`. Member 0 makes the id inside an agreed step of
  // `world`, MPI hands it to the members, each joins (ncclCommInitRank) and warms the group up on
  // `device.stream`. A member that fails to join ends the job (abort_job, "joining <what>: ..."):
  // the others wait inside NCCL's set-up. Returns nullptr on non-members.
  static std::unique_ptr<NcclGroup> join(const Comm& world, const Comm* members, const Device& device, Use use,
                                         const std::string& what);
  class Pending;
  // As join, with NCCL's part in the background: the id is handed out now (MPI, on this thread,
  // in the same order on every rank); ncclCommInitRank and the warm-up (on a stream of its own)
  // run on a thread of their own, so that they overlap what the rank does next, reading its
  // inputs. Pending::get waits for them. One group at a time per device: two joining at once
  // could interleave their warm-up collectives differently on different ranks.
  static Pending join_in_background(const Comm& world, const Comm* members, const Device& device, Use use,
                                    const std::string& what);

  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

  // Enqueued on `stream` (an opaque cudaStream_t), collective over the group; DeviceError on failure.
  // Sum of `count` elements of `buffer` onto `root` (in place there; other ranks' left as they were).
  void reduce_sum(void* buffer, std::size_t count, DType dtype, int root, void* stream);
  // Sum of size() x `count` elements of `buffer` over the members, member r keeping elements
  // [r * count, (r + 1) * count) of it in place.
  void reduce_scatter_sum(void* buffer, std::size_t count, DType dtype, void* stream);
  // `count` elements of `buffer` from `root` into `buffer` on every member.
  void broadcast(void* buffer, std::size_t count, DType dtype, int root, void* stream);
  // Point-to-point with member `peer`.
  void send(const void* buffer, std::size_t count, DType dtype, int peer, void* stream);
  void receive(void* buffer, std::size_t count, DType dtype, int peer, void* stream);

 private:
  NcclGroup(const std::vector<unsigned char>& id, int rank, int size, int device);
  void warm_up(Use use, void* stream);

  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
};

// A group being joined in the background (NcclGroup::join_in_background).
class NcclGroup::Pending {
 public:
  Pending() = default;  // on a rank that is not a member
  Pending(std::future<std::unique_ptr<NcclGroup>> joining, std::string what)
      : joining_(std::move(joining)), what_(std::move(what)) {}
  // The group (nullptr on non-members), once joined. A member that failed to join ends the job
  // (abort_job), as with join: its peers may be waiting inside NCCL.
  NcclGroup* get();

 private:
  std::future<std::unique_ptr<NcclGroup>> joining_;  // its destructor waits for the thread
  std::unique_ptr<NcclGroup> group_;
  std::string what_;
};

// A CUDA runtime call's result: DeviceError naming the call on failure.
void check_cuda(cudaError_t err, const char* call);

}  // namespace tessera::comm
