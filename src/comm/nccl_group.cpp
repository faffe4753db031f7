// NCCL groups (nccl_group.hpp). Every NCCL call is checked: a failure becomes a DeviceError
// naming the call, where it was made and NCCL's own reason.
#include "comm/nccl_group.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "core/error.hpp"

#define NCCL_CHECK(call)                                                                                    \
  do {                                                                                                      \
    const ncclResult_t tessera_nccl_rc_ = (call);                                                           \
    if (tessera_nccl_rc_ != ncclSuccess)                                                                    \
      throw ::tessera::DeviceError(std::string("NCCL call ") + #call + " failed at " + __FILE__ + ":" +     \
                                   std::to_string(__LINE__) + ": " + ncclGetErrorString(tessera_nccl_rc_)); \
  } while (0)

namespace tessera::comm {
namespace {

// NCCL has no complex type: a complex element travels (and sums, part by part) as two of its part.
ncclDataType_t nccl_type(DType dtype) { return real_of(dtype) == DType::f32 ? ncclFloat32 : ncclFloat64; }
std::size_t parts(DType dtype) { return is_complex(dtype) ? 2 : 1; }
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// The bytes of a fresh ncclUniqueId, made on `device`.
std::string unique_id(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return std::string(reinterpret_cast<const char*>(&id), sizeof id);
}

// Member 0 makes the group's id inside an agreed step of `world` (every rank calls this), MPI
// hands it to the members; "" on ranks that are not members. A member needs a GPU; a rank left
// idle (no device) joins no group and needs none.
std::string handed_out_id(const Comm& world, const Comm* members, const Device& device) {
  std::string id;
  world.step([&] {
    if (members && device.id < 0) throw Error("--comm nccl needs a GPU on every rank that exchanges data");
    if (members && members->rank() == 0) id = unique_id(device.id);
  });
  return members ? members->broadcast(id, 0) : std::string();
}

}  // namespace

void check_cuda(cudaError_t err, const char* call) {
  if (err != cudaSuccess)
    throw DeviceError(std::string("CUDA call ") + call + " failed: " + cudaGetErrorName(err) + " (" +
                      cudaGetErrorString(err) + ")");
}

std::unique_ptr<NcclGroup> NcclGroup::join(const Comm& world, const Comm* members, const Device& device, Use use,
                                           const std::string& what) {
  const std::string id = handed_out_id(world, members, device);
  if (!members) return nullptr;
  // Not a Comm::step: the group's other members wait inside NCCL's init.
  try {
    std::unique_ptr<NcclGroup> group(
        new NcclGroup(std::vector<unsigned char>(id.begin(), id.end()), members->rank(), members->size(), device.id));
    group->warm_up(use, device.stream);
    return group;
  } catch (const std::exception& e) {
    abort_job("joining " + what + ": " + e.what());
  }
}

NcclGroup::Pending NcclGroup::join_in_background(const Comm& world, const Comm* members, const Device& device, Use use,
                                                 const std::string& what) {
  std::string id = handed_out_id(world, members, device);
  if (!members) return {};
  const int rank = members->rank(), size = members->size(), gpu = device.id;
  auto joining = std::async(std::launch::async, [id = std::move(id), rank, size, gpu, use] {
    std::unique_ptr<NcclGroup> group(new NcclGroup(std::vector<unsigned char>(id.begin(), id.end()), rank, size, gpu));
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    try {
      group->warm_up(use, stream);
    } catch (...) {
      (void)cudaStreamDestroy(stream);
      throw;
    }
    check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
    return group;
  });
  return Pending(std::move(joining), what);
}

NcclGroup* NcclGroup::Pending::get() {
  if (!group_ && joining_.valid()) {
    try {
      group_ = joining_.get();
    } catch (const std::exception& e) {
      abort_job("joining " + what_ + ": " + e.what());
    }
  }
  return group_.get();
}

NcclGroup::NcclGroup(const std::vector<unsigned char>& id_bytes, int rank, int size, int device)
    : rank_(rank), size_(size), device_(device) {
  ncclUniqueId id;
  if (id_bytes.size() != sizeof id)
    throw InputError("NCCL unique id of " + std::to_string(id_bytes.size()) + " bytes, expected " +
                     std::to_string(sizeof id));
  std::memcpy(&id, id_bytes.data(), sizeof id);
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
}

NcclGroup::~NcclGroup() {
  if (comm_) (void)ncclCommDestroy(comm_);
}

void NcclGroup::warm_up(Use use, void* stream) {
  void* warm = nullptr;
  constexpr std::size_t kBytes = std::size_t{1} << 20;
  check_cuda(cudaMalloc(&warm, kBytes), "cudaMalloc (NCCL warm-up buffer)");
  struct Free {
    void* p;
    ~Free() { (void)cudaFree(p); }
  } free_warm{warm};
  try {
    check_cuda(cudaMemsetAsync(warm, 0, kBytes, as_stream(stream)), "cudaMemsetAsync");
    if (use == Use::reduce) {
      reduce_sum(warm, kBytes / sizeof(float), DType::f32, 0, stream);
    } else if (use == Use::reduce_scatter) {
      reduce_scatter_sum(warm, kBytes / sizeof(float) / static_cast<std::size_t>(size_), DType::f32, stream);
    } else {
      broadcast(warm, kBytes / sizeof(float), DType::f32, 0, stream);
      // Point-to-point links (the gather to member 0) are set up on first use too.
      for (int peer = 1; peer < size_; ++peer) {
        if (rank_ == 0) receive(warm, 1, DType::f32, peer, stream);
        if (rank_ == peer) send(warm, 1, DType::f32, 0, stream);
      }
    }
    check_cuda(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
  } catch (...) {
    (void)cudaStreamSynchronize(as_stream(stream));  // before the buffer goes
    throw;
  }
}

void NcclGroup::reduce_sum(void* buffer, std::size_t count, DType dtype, int root, void* stream) {
  NCCL_CHECK(
      ncclReduce(buffer, buffer, count * parts(dtype), nccl_type(dtype), ncclSum, root, comm_, as_stream(stream)));
}

void NcclGroup::reduce_scatter_sum(void* buffer, std::size_t count, DType dtype, void* stream) {
  // In place: this member's piece of the result is its own piece of the input.
  auto* recv = static_cast<unsigned char*>(buffer) + static_cast<std::size_t>(rank_) * count * dtype_size(dtype);
  NCCL_CHECK(
      ncclReduceScatter(buffer, recv, count * parts(dtype), nccl_type(dtype), ncclSum, comm_, as_stream(stream)));
}

void NcclGroup::broadcast(void* buffer, std::size_t count, DType dtype, int root, void* stream) {
  NCCL_CHECK(ncclBroadcast(buffer, buffer, count * parts(dtype), nccl_type(dtype), root, comm_, as_stream(stream)));
}

void NcclGroup::send(const void* buffer, std::size_t count, DType dtype, int peer, void* stream) {
  NCCL_CHECK(ncclSend(buffer, count * parts(dtype), nccl_type(dtype), peer, comm_, as_stream(stream)));
}

void NcclGroup::receive(void* buffer, std::size_t count, DType dtype, int peer, void* stream) {
  NCCL_CHECK(ncclRecv(buffer, count * parts(dtype), nccl_type(dtype), peer, comm_, as_stream(stream)));
}

}  // namespace tessera::comm
