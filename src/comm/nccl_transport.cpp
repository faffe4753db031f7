// The NCCL path: panels broadcast between the GPUs on the backend's copy stream, partial products
// summed onto rank 0's GPU or scattered over the GPUs, C blocks sent GPU to GPU. Without NCCL in the build, asking for
// it throws.
#include "comm/transports.hpp"
#include "core/error.hpp"

#ifdef TESSERA_HAVE_NCCL
#include <exception>
#include <string>

#include "comm/nccl_group.hpp"

namespace tessera::comm {
namespace {

class NcclGridBroadcast final : public GridBroadcast {
 public:
  NcclGridBroadcast(std::unique_ptr<NcclGroup> row, std::unique_ptr<NcclGroup> col, DType dtype)
      : row_(std::move(row)), col_(std::move(col)), dtype_(dtype) {}
  bool stages_on_host() const override { return false; }
  void broadcast(const LinePanel& a, const LinePanel& b) override {
    along(row_.get(), a);
    along(col_.get(), b);
  }

 private:
  // Into the slot after what its root staged there; a line of one rank has no group.
  void along(NcclGroup* line, const LinePanel& p) const {
    if (!line || p.elements() == 0) return;
    const auto count = static_cast<std::size_t>(p.elements());
    p.slot.enqueue([&](void* stream) { line->broadcast(p.slot.device(), count, dtype_, p.root, stream); });
  }

  std::unique_ptr<NcclGroup> row_, col_;
  DType dtype_;
};

class NcclSumToRoot final : public SumToRoot {
 public:
  NcclSumToRoot(NcclGroup::Pending group, DType dtype) : group_(std::move(group)), dtype_(dtype) {}
  bool on_device() const override { return true; }
  void sum(ReduceData& data, std::size_t count, int root) override {
    data.enqueue([&](void* stream) {
      if (count > 0) group_.get()->reduce_sum(data.device(), count, dtype_, root, stream);
    });
  }

 private:
  NcclGroup::Pending group_;
  DType dtype_;
};

// ncclReduceScatter in place: rank r's piece of the sum lands at offset r * piece of its own
// partial (NCCL's in-place form: recvbuff = sendbuff + rank * recvcount).
class NcclSumScatter final : public SumScatter {
 public:
  NcclSumScatter(NcclGroup::Pending group, DType dtype) : group_(std::move(group)), dtype_(dtype) {}
  bool on_device() const override { return true; }
  void sum_scatter(ReduceData& data, std::size_t piece, void* /*into: the device keeps it*/) override {
    data.enqueue([&](void* stream) {
      if (piece > 0) group_.get()->reduce_scatter_sum(data.device(), piece, dtype_, stream);
    });
  }

 private:
  NcclGroup::Pending group_;
  DType dtype_;
};

// Blocking sends and receives of device memory on the transport's stream. A failure leaves the
// peer waiting inside NCCL, where no error agreement reaches it: it ends the job (abort_job).
class NcclBlockLink final : public BlockLink {
 public:
  NcclBlockLink(std::unique_ptr<NcclGroup> group, DType dtype, void* stream)
      : group_(std::move(group)), dtype_(dtype), stream_(stream) {}
  void send(const Block& mine, int to) override {
    try {
      check_cuda(cudaSetDevice(group_->device()), "cudaSetDevice");
      if (mine.elements > 0) group_->send(mine.device, static_cast<std::size_t>(mine.elements), dtype_, to, stream_);
      check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
    } catch (const std::exception& e) {
      abort_job("sending the C block to rank " + std::to_string(to) + ": " + e.what());
    }
  }
  void receive(int from, void* into, std::int64_t elements, const Block& staging) override {
    try {
      if (elements > staging.elements) throw Error("a C block larger than the device buffer it is received into");
      check_cuda(cudaSetDevice(group_->device()), "cudaSetDevice");
      const auto s = static_cast<cudaStream_t>(stream_);
      if (elements > 0) {
        group_->receive(staging.device, static_cast<std::size_t>(elements), dtype_, from, stream_);
        check_cuda(cudaMemcpyAsync(into, staging.device, static_cast<std::size_t>(elements) * dtype_size(dtype_),
                                   cudaMemcpyDeviceToHost, s),
                   "cudaMemcpyAsync");
      }
      check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    } catch (const std::exception& e) {
      abort_job("receiving the C block of rank " + std::to_string(from) + ": " + e.what());
    }
  }

 private:
  std::unique_ptr<NcclGroup> group_;
  DType dtype_;
  void* stream_;
};

class NcclTransport final : public Transport {
 public:
  NcclTransport(DType dtype, const Device& device) : dtype_(dtype), device_(device) {}
  Path path() const override { return Path::nccl; }

  // One group per grid row and per grid column of more than one rank, joined rows first on
  // every rank, so that the collective inits cannot cross.
  std::unique_ptr<GridBroadcast> grid_broadcast(const Comm& world, const Comm* row, const Comm* col) override {
    const auto line = [](const Comm* c) { return c && c->size() > 1 ? c : nullptr; };
    auto rows = NcclGroup::join(world, line(row), device_, NcclGroup::Use::broadcast_and_gather,
                                "an NCCL group of the process grid");
    auto cols = NcclGroup::join(world, line(col), device_, NcclGroup::Use::broadcast_and_gather,
                                "an NCCL group of the process grid");
    return std::make_unique<NcclGridBroadcast>(std::move(rows), std::move(cols), dtype_);
  }
  std::unique_ptr<BlockLink> block_link(const Comm& world, const Comm* members) override {
    auto group = NcclGroup::join(world, members, device_, NcclGroup::Use::broadcast_and_gather,
                                 "the NCCL group for the gather of C");
    return std::make_unique<NcclBlockLink>(std::move(group), dtype_, device_.stream);
  }
  std::unique_ptr<SumToRoot> sum_to_root(const Comm& world) override {
    return std::make_unique<NcclSumToRoot>(
        NcclGroup::join_in_background(world, &world, device_, NcclGroup::Use::reduce, "the NCCL group"), dtype_);
  }
  std::unique_ptr<SumScatter> sum_scatter(const Comm& world) override {
    return std::make_unique<NcclSumScatter>(
        NcclGroup::join_in_background(world, &world, device_, NcclGroup::Use::reduce_scatter, "the NCCL group"),
        dtype_);
  }

 private:
  DType dtype_;
  Device device_;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(DType dtype, const Device& device) {
  // A rank without a GPU (one left idle) may hold the transport; joining a group needs one
  // (nccl_group.cpp).
  return std::make_unique<NcclTransport>(dtype, device);
}

}  // namespace tessera::comm

#else  // no NCCL in this build

namespace tessera::comm {
std::unique_ptr<Transport> make_nccl_transport(DType, const Device&) {
  throw Error("this build has no NCCL: no device-to-device communication");
}
}  // namespace tessera::comm

#endif
