#pragma once
// NCCL glue for the ksplit and summa algorithms: a communicator of GPUs that sums device buffers
// onto one of them (ncclReduce over NVLink / PCIe peer links) or broadcasts one (ncclBroadcast). Knows nothing of MPI: the caller makes an
// id on one rank (nccl_unique_id), hands the bytes to every rank by its own means (MPI_Bcast in
// run/ksplit.cpp), and each rank joins with them. Compiled only when TESSERA_HAVE_NCCL.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::backend {

// The bytes of a fresh ncclUniqueId. Throws DeviceError.
std::vector<unsigned char> nccl_unique_id();

// One rank's member of an NCCL communicator on the current device; destroyed with the object.
class NcclReducer {
 public:
  // Collective over all `size` ranks (ncclCommInitRank). Throws DeviceError, InputError for an
  // id of the wrong size.
  NcclReducer(const std::vector<unsigned char>& id, int rank, int size);
  ~NcclReducer();
  NcclReducer(const NcclReducer&) = delete;
  NcclReducer& operator=(const NcclReducer&) = delete;

  // Enqueues the elementwise sum over the ranks of `count` elements of `buffer` (device) into
  // `buffer` on `root` (in place; other ranks' buffers are left as they were). Collective.
  void reduce_sum(void* buffer, std::size_t count, DType dtype, int root, cudaStream_t stream);
  // Enqueues a broadcast of `count` elements of `buffer` (device) from `root` into `buffer` on
  // every rank. Collective (summa's panels).
  void broadcast(void* buffer, std::size_t count, DType dtype, int root, cudaStream_t stream);
  // Enqueue a point-to-point send of `count` elements to member `peer` / a receive from it.
  void send(const void* buffer, std::size_t count, DType dtype, int peer, cudaStream_t stream);
  void receive(void* buffer, std::size_t count, DType dtype, int peer, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::backend
