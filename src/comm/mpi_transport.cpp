// The MPI paths: host MPI (panels through page-locked host staging) and CUDA-aware MPI (panels
// straight into device memory). Both sum and send C blocks on the host.
#include <mpi.h>

#include <algorithm>
#include <optional>

#include "comm/transports.hpp"

namespace tessera::comm {
namespace {

constexpr int kTagBlock = 102;

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::c64:
      return MPI_C_FLOAT_COMPLEX;  // MPI_SUM adds complex numbers part by part
    case DType::c128:
      return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DOUBLE;
}

// A committed MPI datatype, freed with the object.
class Datatype {
 public:
  explicit Datatype(MPI_Datatype t) : t_(t) { TESSERA_MPI_CHECK(MPI_Type_commit(&t_)); }
  ~Datatype() {
    if (t_ != MPI_DATATYPE_NULL) (void)MPI_Type_free(&t_);
  }
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  MPI_Datatype get() const { return t_; }

 private:
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

// rows x cols elements with a row stride of `ld` (a panel inside a rank's block), as one MPI item.
MPI_Datatype strided(std::int64_t rows, std::int64_t cols, std::int64_t ld, MPI_Datatype elem) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  TESSERA_MPI_CHECK(MPI_Type_vector(mpi_count(rows, "a panel's row count"), mpi_count(cols, "a panel's width"),
                                    mpi_count(ld, "a block's row length"), elem, &t));
  return t;
}

// Whether this rank is the panel's root on its line (a line of one: it holds the panel itself).
bool is_root(const Comm* line, const LinePanel& p) { return !line || line->rank() == p.root; }

bool spans(const Comm* line, const LinePanel& p) { return line && line->size() > 1 && p.elements() > 0; }

// Host MPI: the roots send straight from their blocks (a strided type for A's columns), the others
// receive into the slot's page-locked staging and copy it up.
class HostGridBroadcast final : public GridBroadcast {
 public:
  HostGridBroadcast(const Comm* row, const Comm* col, DType dtype) : row_(row), col_(col), elem_(mpi_type(dtype)) {}
  bool stages_on_host() const override { return (row_ && row_->size() > 1) || (col_ && col_->size() > 1); }
  void broadcast(const LinePanel& a, const LinePanel& b) override {
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::optional<Datatype> types[2];  // alive until the broadcasts are done
    post(row_, a, types[0], req[0]);
    post(col_, b, types[1], req[1]);
    TESSERA_MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    if (!is_root(row_, a)) a.slot.upload();
    if (!is_root(col_, b)) b.slot.upload();
  }

 private:
  void post(const Comm* line, const LinePanel& p, std::optional<Datatype>& type, MPI_Request& req) const {
    if (!spans(line, p)) return;
    const bool root = is_root(line, p);
    type.emplace(strided(p.rows, p.cols, root ? p.own_ld : p.cols, elem_));
    void* at = root ? const_cast<void*>(p.own) : p.slot.host_staging();
    TESSERA_MPI_CHECK(MPI_Ibcast(at, 1, type->get(), p.root, line->get(), &req));
  }

  const Comm* row_;
  const Comm* col_;
  MPI_Datatype elem_;
};

// CUDA-aware MPI: the roots wait for their staged piece to reach the device, then every rank of
// the line broadcasts device memory.
class CudaAwareGridBroadcast final : public GridBroadcast {
 public:
  CudaAwareGridBroadcast(const Comm* row, const Comm* col, DType dtype)
      : row_(row), col_(col), elem_(mpi_type(dtype)) {}
  bool stages_on_host() const override { return false; }
  void broadcast(const LinePanel& a, const LinePanel& b) override {
    if (is_root(row_, a) || is_root(col_, b)) a.slot.wait_staged();  // A and B share the slot
    send(row_, a);
    send(col_, b);
  }

 private:
  void send(const Comm* line, const LinePanel& p) const {
    if (!spans(line, p)) return;
    TESSERA_MPI_CHECK(MPI_Bcast(p.slot.device(), mpi_count(p.elements(), "a panel"), elem_, p.root, line->get()));
  }

  const Comm* row_;
  const Comm* col_;
  MPI_Datatype elem_;
};

// MPI_Reduce in pieces of kReducePieceBytes, in place on the root.
class HostSumToRoot final : public SumToRoot {
 public:
  HostSumToRoot(const Comm& world, DType dtype) : world_(world), dtype_(dtype) {}
  bool on_device() const override { return false; }
  void sum(ReduceData& data, std::size_t count, int root) override {
    const MPI_Datatype type = mpi_type(dtype_);
    auto* bytes = static_cast<unsigned char*>(data.host());
    const std::size_t esize = dtype_size(dtype_);
    for (std::size_t done = 0; done < count;) {
      const std::size_t n = std::min<std::size_t>(count - done, kReducePieceBytes / esize);
      void* at = bytes + done * esize;
      if (world_.rank() == root)
        TESSERA_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, at, static_cast<int>(n), type, MPI_SUM, root, world_.get()));
      else
        TESSERA_MPI_CHECK(MPI_Reduce(at, nullptr, static_cast<int>(n), type, MPI_SUM, root, world_.get()));
      done += n;
    }
  }

 private:
  const Comm& world_;
  DType dtype_;
};

// MPI_Reduce_scatter_block from the partial in host memory into this rank's piece.
class HostSumScatter final : public SumScatter {
 public:
  HostSumScatter(const Comm& world, DType dtype) : world_(world), dtype_(dtype) {}
  bool on_device() const override { return false; }
  void sum_scatter(ReduceData& data, std::size_t piece, void* into) override {
    const int count = mpi_count(static_cast<std::int64_t>(piece), "ksplit: a rank's piece of a band of C");
    if (count == 0) return;
    TESSERA_MPI_CHECK(MPI_Reduce_scatter_block(data.host(), into, count, mpi_type(dtype_), MPI_SUM, world_.get()));
  }

 private:
  const Comm& world_;
  DType dtype_;
};

// C blocks between host memories (blocking, any size).
class HostBlockLink final : public BlockLink {
 public:
  HostBlockLink(const Comm* members, DType dtype) : members_(members), esize_(dtype_size(dtype)) {}
  void send(const Block& mine, int to) override {
    members_->send_bytes(mine.host, static_cast<std::size_t>(mine.elements) * esize_, to, kTagBlock);
  }
  void receive(int from, void* into, std::int64_t elements, const Block& /*staging: not needed*/) override {
    members_->recv_bytes(into, static_cast<std::size_t>(elements) * esize_, from, kTagBlock);
  }

 private:
  const Comm* members_;
  std::size_t esize_;
};

// Host MPI, and the base of CUDA-aware MPI (which differs in the panels only).
class HostTransport : public Transport {
 public:
  explicit HostTransport(DType dtype) : dtype_(dtype) {}
  Path path() const override { return Path::host; }
  std::unique_ptr<GridBroadcast> grid_broadcast(const Comm&, const Comm* row, const Comm* col) override {
    return std::make_unique<HostGridBroadcast>(row, col, dtype_);
  }
  std::unique_ptr<BlockLink> block_link(const Comm&, const Comm* members) override {
    return std::make_unique<HostBlockLink>(members, dtype_);
  }
  std::unique_ptr<SumToRoot> sum_to_root(const Comm& world) override {
    return std::make_unique<HostSumToRoot>(world, dtype_);
  }
  std::unique_ptr<SumScatter> sum_scatter(const Comm& world) override {
    return std::make_unique<HostSumScatter>(world, dtype_);
  }

 protected:
  DType dtype_;
};

class CudaAwareTransport final : public HostTransport {
 public:
  using HostTransport::HostTransport;
  Path path() const override { return Path::cuda_aware; }
  std::unique_ptr<GridBroadcast> grid_broadcast(const Comm&, const Comm* row, const Comm* col) override {
    return std::make_unique<CudaAwareGridBroadcast>(row, col, dtype_);
  }
};

}  // namespace

std::unique_ptr<Transport> make_host_transport(DType dtype) { return std::make_unique<HostTransport>(dtype); }

std::unique_ptr<Transport> make_cuda_aware_transport(DType dtype) {
  return std::make_unique<CudaAwareTransport>(dtype);
}

}  // namespace tessera::comm
