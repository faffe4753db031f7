// The MPI paths' exchanges run on several ranks in one process each (COSMA's tests/multiply.cpp
// style: this executable's main initialises MPI; add_mpi_catch_test runs it under mpiexec). The
// "device" of a panel slot is host memory here, which MPI handles on either path, so the host and
// CUDA-aware broadcasts, the sum onto the root and the block link are checked without a GPU.
#include <mpi.h>
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "comm/exchange.hpp"

using tessera::DType;
namespace comm = tessera::comm;
using comm::Path;

namespace {

// A panel slot on host memory that records what the exchange asked of it.
class HostSlot final : public comm::PanelSlot {
 public:
  explicit HostSlot(std::size_t elements) : device_(elements, -1.0), staging_(elements, -2.0) {}
  void* device() override { return device_.data(); }
  void* host_staging() override {
    ++staging_asked;
    return staging_.data();
  }
  void upload() override {
    ++uploads;
    device_ = staging_;
  }
  void wait_staged() override { ++staged_waits; }
  void enqueue(const comm::StreamWork&) override { FAIL("an MPI path enqueued device work"); }

  const std::vector<double>& panel() const { return device_; }
  int staging_asked = 0, uploads = 0, staged_waits = 0;

 private:
  std::vector<double> device_, staging_;
};

// Element (r, c) of the test's A block (and, with another seed, of its B block).
double value(std::int64_t r, std::int64_t c, int seed) { return seed * 1000.0 + static_cast<double>(r * 100 + c); }

// One panel broadcast over all ranks as one grid row (A, from `root`) and a grid column of one
// rank each (B, held by every rank itself). The root's A piece is `rows` x `w` inside a block of
// `ld` columns, as summa's own A block holds it.
void check_broadcast(Path path, int root) {
  const comm::Comm world(MPI_COMM_WORLD);
  const comm::Comm self = world.split(world.rank());  // a column of one rank
  const std::int64_t rows = 3, w = 2, ld = 5, col0 = 1;
  std::vector<double> block(static_cast<std::size_t>(rows * ld));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < ld; ++c) block[static_cast<std::size_t>(r * ld + c)] = value(r, c, 1);
  const bool is_root = world.rank() == root;
  HostSlot a(static_cast<std::size_t>(rows * w)), b(static_cast<std::size_t>(w * 4));
  if (is_root)  // what stage() does on the root: its own piece into the slot
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<double*>(a.device()) + r * w, &block[static_cast<std::size_t>(r * ld + col0)],
                  static_cast<std::size_t>(w) * sizeof(double));
  const auto transport = comm::make_transport(path, DType::f64, {});
  const auto broadcast = transport->grid_broadcast(world, &world, &self);
  CHECK(broadcast->stages_on_host() == (path == Path::host && world.size() > 1));
  broadcast->broadcast({a, root, rows, w, is_root ? &block[static_cast<std::size_t>(col0)] : nullptr, ld},
                       {b, 0, w, 4, nullptr, 4});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < w; ++c) CHECK(a.panel()[static_cast<std::size_t>(r * w + c)] == value(r, col0 + c, 1));
  CHECK(b.uploads == 0);  // a column of one rank: nothing travels
  if (path == Path::host) {
    CHECK(a.uploads == (is_root || world.size() == 1 ? 0 : 1));
    CHECK(a.staged_waits == 0);
  } else {
    CHECK(a.uploads == 0);
    CHECK(a.staging_asked == 0);
    CHECK(a.staged_waits == 1);  // every rank holds its own B piece (a column of one): A and B share the slot
  }
}

// ksplit's partial products in host memory.
class HostPartial final : public comm::ReduceData {
 public:
  explicit HostPartial(std::vector<double>& data) : data_(data) {}
  void* host() override { return data_.data(); }
  void* device() override { return nullptr; }
  void enqueue(const comm::StreamWork&) override { FAIL("the host sum enqueued device work"); }

 private:
  std::vector<double>& data_;
};

}  // namespace

TEST_CASE("host MPI broadcasts a panel from its root's block, through the others' staging", "[comm][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  for (int root = 0; root < world.size(); ++root) check_broadcast(Path::host, root);
}

TEST_CASE("CUDA-aware MPI broadcasts a panel in the slots' device memory", "[comm][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  for (int root = 0; root < world.size(); ++root) check_broadcast(Path::cuda_aware, root);
}

TEST_CASE("host MPI sums every rank's partial onto the root, leaving the others' as they were", "[comm][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const auto transport = comm::make_transport(Path::host, DType::f64, {});
  const auto sum = transport->sum_to_root(world);
  CHECK_FALSE(sum->on_device());
  const std::size_t count = 1001;
  for (int root = 0; root < world.size(); ++root) {
    std::vector<double> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = (world.rank() + 1) * static_cast<double>(i);
    HostPartial partial(mine);
    sum->sum(partial, count, root);
    const double ranks = world.size();
    for (std::size_t i = 0; i < count; i += 97) {
      const double expected = world.rank() == root ? ranks * (ranks + 1) / 2 * static_cast<double>(i)
                                                   : (world.rank() + 1) * static_cast<double>(i);
      CHECK(mine[i] == expected);
    }
  }
}

TEST_CASE("host MPI sums a band over the ranks, each keeping its own piece (reduce-scatter)", "[comm][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const auto transport = comm::make_transport(Path::host, DType::f64, {});
  const auto scatter = transport->sum_scatter(world);
  CHECK_FALSE(scatter->on_device());
  const std::size_t piece = 13;  // odd, to catch an offset in elements taken for bytes
  const auto ranks = static_cast<std::size_t>(world.size());
  std::vector<double> partial(ranks * piece);
  for (std::size_t i = 0; i < partial.size(); ++i) partial[i] = (world.rank() + 1) * static_cast<double>(i);
  std::vector<double> mine(piece, -1.0);
  HostPartial data(partial);
  scatter->sum_scatter(data, piece, mine.data());
  const double sum_of_factors = static_cast<double>(ranks) * static_cast<double>(ranks + 1) / 2;
  for (std::size_t j = 0; j < piece; ++j)
    CHECK(mine[j] == sum_of_factors * static_cast<double>(static_cast<std::size_t>(world.rank()) * piece + j));
}

TEST_CASE("the host block link carries every rank's C block to rank 0", "[comm][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const auto transport = comm::make_transport(Path::host, DType::f32, {});
  const auto link = transport->block_link(world, &world);
  const std::int64_t elements = 7 + world.rank();
  std::vector<float> mine(static_cast<std::size_t>(elements), static_cast<float>(world.rank()));
  if (world.rank() != 0) {
    link->send({mine.data(), nullptr, elements}, 0);
    return;
  }
  for (int r = 1; r < world.size(); ++r) {
    std::vector<float> got(static_cast<std::size_t>(7 + r), -1.0f);
    link->receive(r, got.data(), 7 + r, {mine.data(), nullptr, elements});
    CHECK(got == std::vector<float>(static_cast<std::size_t>(7 + r), static_cast<float>(r)));
  }
}

TEST_CASE("NCCL: a rank without a GPU holds the transport and joins no group; a member without one is refused",
          "[comm][mpi][nccl]") {
  if (!comm::nccl_compiled()) {
    WARN("built without NCCL: no NCCL transport to check");
    return;
  }
  const comm::Comm world(MPI_COMM_WORLD);
  // A rank left idle: its backend has no device. It takes part in every maker (they are
  // collective) as a member of no group, so neither NCCL nor the GPU driver is asked for anything.
  std::unique_ptr<comm::Transport> t;
  REQUIRE_NOTHROW(t = comm::make_transport(Path::nccl, DType::f64, comm::Device{}));
  CHECK_NOTHROW(t->grid_broadcast(world, nullptr, nullptr));
  CHECK_NOTHROW(t->block_link(world, nullptr));
  // A member of a group without a GPU: one refusal, the same on every rank, before any NCCL call.
  const comm::Comm self = world.split(world.rank());
  try {
    (void)t->block_link(world, &self);
    FAIL("a member without a GPU was let into an NCCL group");
  } catch (const comm::JobError& e) {
    CHECK(std::string(e.what()).find("needs a GPU on every rank that exchanges data") != std::string::npos);
  }
}
