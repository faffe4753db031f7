// NCCL glue for ksplit (nccl_reduce.hpp). Every NCCL call is checked: a failure becomes a
// DeviceError naming the call, where it was made and NCCL's own reason.
#include <nccl.h>

#include <cstring>
#include <string>

#include "backend/nccl_reduce.hpp"
#include "core/error.hpp"

#define NCCL_CHECK(call)                                                                          \
  do {                                                                                            \
    const ncclResult_t tessera_nccl_rc_ = (call);                                                 \
    if (tessera_nccl_rc_ != ncclSuccess)                                                          \
      throw ::tessera::DeviceError(std::string("NCCL call ") + #call + " failed at " + __FILE__ + \
                                   ":" + std::to_string(__LINE__) + ": " +                        \
                                   ncclGetErrorString(tessera_nccl_rc_));                         \
  } while (0)

namespace tessera::backend {

std::vector<unsigned char> nccl_unique_id() {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<unsigned char> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

struct NcclReducer::Impl {
  ncclComm_t comm = nullptr;
};

NcclReducer::NcclReducer(const std::vector<unsigned char>& id_bytes, int rank, int size) : impl_(std::make_unique<Impl>()) {
  ncclUniqueId id;
  if (id_bytes.size() != sizeof id)
    throw InputError("NCCL unique id of " + std::to_string(id_bytes.size()) + " bytes, expected " +
                     std::to_string(sizeof id));
  std::memcpy(&id, id_bytes.data(), sizeof id);
  NCCL_CHECK(ncclCommInitRank(&impl_->comm, size, id, rank));
}

NcclReducer::~NcclReducer() {
  if (impl_ && impl_->comm) (void)ncclCommDestroy(impl_->comm);
}

void NcclReducer::reduce_sum(void* buffer, std::size_t count, DType dtype, int root, cudaStream_t stream) {
  const ncclDataType_t type = dtype == DType::f32 ? ncclFloat32 : ncclFloat64;
  NCCL_CHECK(ncclReduce(buffer, buffer, count, type, ncclSum, root, impl_->comm, stream));
}

void NcclReducer::broadcast(void* buffer, std::size_t count, DType dtype, int root, cudaStream_t stream) {
  const ncclDataType_t type = dtype == DType::f32 ? ncclFloat32 : ncclFloat64;
  NCCL_CHECK(ncclBroadcast(buffer, buffer, count, type, root, impl_->comm, stream));
}

void NcclReducer::send(const void* buffer, std::size_t count, DType dtype, int peer, cudaStream_t stream) {
  const ncclDataType_t type = dtype == DType::f32 ? ncclFloat32 : ncclFloat64;
  NCCL_CHECK(ncclSend(buffer, count, type, peer, impl_->comm, stream));
}

void NcclReducer::receive(void* buffer, std::size_t count, DType dtype, int peer, cudaStream_t stream) {
  const ncclDataType_t type = dtype == DType::f32 ? ncclFloat32 : ncclFloat64;
  NCCL_CHECK(ncclRecv(buffer, count, type, peer, impl_->comm, stream));
}

}  // namespace tessera::backend
