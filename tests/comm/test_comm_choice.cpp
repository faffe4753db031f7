// The comm choice, in-process: which path --comm, the backend and NCCL's availability pick
// (summa's choose_path, ksplit's choose_reduce_path), and which implementation make_transport
// builds for it. No MPI calls: the transports are only built here, not used (test_exchanges.cpp
// runs them on several ranks).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <string>
#include <vector>

#include "comm/cpu_share.hpp"
#include "comm/exchange.hpp"
#include "comm/path.hpp"
#include "comm/peers.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"

using tessera::DType;
using tessera::Error;
using tessera::InputError;
namespace comm = tessera::comm;
using comm::Path;

TEST_CASE("summa: auto takes nccl, then cuda-aware, then host", "[comm][choice]") {
  struct Case {
    bool cuda, nccl, cuda_aware;
    Path expected;
  };
  const auto c = GENERATE(Case{true, true, true, Path::nccl}, Case{true, true, false, Path::nccl},
                          Case{true, false, true, Path::cuda_aware}, Case{true, false, false, Path::host},
                          Case{false, false, false, Path::host}, Case{false, false, true, Path::host},
                          // the CPU backend never takes a device path, whatever the build has
                          Case{false, true, true, Path::host});
  CHECK(comm::choose_path(std::nullopt, c.cuda, c.nccl, c.cuda_aware) == c.expected);
}

TEST_CASE("summa: an explicit --comm is taken where it can run, refused with the reason where not", "[comm][choice]") {
  CHECK(comm::choose_path(Path::host, true, true, true) == Path::host);
  CHECK(comm::choose_path(Path::host, false, false, false) == Path::host);
  CHECK(comm::choose_path(Path::nccl, true, true, false) == Path::nccl);
  CHECK(comm::choose_path(Path::cuda_aware, true, true, true) == Path::cuda_aware);
  const auto refused = [](const std::string& want, bool cuda, bool nccl, bool aware, const std::string& why) {
    try {
      (void)comm::choose_path(comm::parse_path(want), cuda, nccl, aware);
      FAIL("--comm " << want << " was accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  };
  refused("nccl", false, true, true, "--comm nccl needs the cuda backend");
  refused("nccl", true, false, true, "two ranks share a GPU");
  refused("cuda-aware", false, false, true, "--comm cuda-aware needs the cuda backend");
  refused("cuda-aware", true, true, false, "does not report CUDA support");
  refused("carrier-pigeon", true, true, true, "--comm 'carrier-pigeon' is not one of: auto, host, cuda-aware, nccl");
}

TEST_CASE("ksplit: the sum is on the devices where NCCL is usable and not refused", "[comm][choice]") {
  CHECK(comm::choose_reduce_path(std::nullopt, true) == Path::nccl);
  CHECK(comm::choose_reduce_path(Path::nccl, true) == Path::nccl);
  CHECK(comm::choose_reduce_path(Path::host, true) == Path::host);
  CHECK(comm::choose_reduce_path(std::nullopt, false) == Path::host);
  CHECK(comm::choose_reduce_path(Path::host, false) == Path::host);
  CHECK_THROWS_AS(comm::choose_reduce_path(Path::nccl, false), InputError);
}

TEST_CASE("paths are named as --comm and the report name them; MPI paths count in int", "[comm][choice]") {
  CHECK(comm::path_name(Path::host) == "host");
  CHECK(comm::path_name(Path::cuda_aware) == "cuda-aware");
  CHECK(comm::path_name(Path::nccl) == "nccl");
  for (const Path path : {Path::host, Path::cuda_aware, Path::nccl})
    CHECK(comm::parse_path(comm::path_name(path)) == path);
  CHECK_FALSE(comm::parse_path("auto").has_value());
  CHECK(comm::int_counts(Path::host));
  CHECK(comm::int_counts(Path::cuda_aware));
  CHECK_FALSE(comm::int_counts(Path::nccl));
}

TEST_CASE("make_transport builds the chosen path's implementation", "[comm][choice]") {
  for (const Path path : {Path::host, Path::cuda_aware}) {
    const auto transport = comm::make_transport(path, DType::f64, {});
    REQUIRE(transport);
    CHECK(transport->path() == path);
  }
  // NCCL is never quietly replaced by another path: a build without it refuses it. With it, a
  // rank without a GPU (one left idle) may hold the transport; joining a group needs a GPU
  // (tests/comm/test_exchanges.cpp, "[nccl]").
  if (comm::nccl_compiled()) {
    const auto transport = comm::make_transport(Path::nccl, DType::f32, {});
    REQUIRE(transport);
    CHECK(transport->path() == Path::nccl);
  } else {
    CHECK_THROWS_AS(comm::make_transport(Path::nccl, DType::f32, {}), Error);
  }
}

// ---- which transport NCCL has between two ranks' GPUs (comm/peers.hpp) ----------------------
TEST_CASE("nccl transport: NVLink or PCIe peer access, else host memory, else the network", "[comm][peers]") {
  using tessera::comm::nccl_transport;
  using tessera::comm::NcclEnv;
  using tessera::comm::PeerLink;
  const NcclEnv plain;
  CHECK(nccl_transport(PeerLink{true, true, true, true}, plain) == "P2P/NVLink");
  CHECK(nccl_transport(PeerLink{true, true, true, false}, plain) == "P2P/PCIe");
  // A peer GPU hidden by per-task binding, or no peer access: staged through host memory.
  CHECK(nccl_transport(PeerLink{true, false, false, false}, plain) == "SHM");
  CHECK(nccl_transport(PeerLink{true, true, false, true}, plain) == "SHM");
  CHECK(nccl_transport(PeerLink{false, true, true, true}, plain) == "NET");
  NcclEnv no_p2p;
  no_p2p.p2p_disabled = true;
  CHECK(nccl_transport(PeerLink{true, true, true, true}, no_p2p) == "SHM");
  NcclEnv no_p2p_no_shm = no_p2p;
  no_p2p_no_shm.shm_disabled = true;
  CHECK(nccl_transport(PeerLink{true, true, true, true}, no_p2p_no_shm) == "NET");
  NcclEnv loc;
  loc.p2p_level = "LOC";
  CHECK(nccl_transport(PeerLink{true, true, true, true}, loc) == "SHM");
}

// ---- each rank's share of the node's cores (comm/cpu_share.hpp) ------------------------------
TEST_CASE("cpu share: contiguous slices, the first ones longer, every core once", "[comm][cpus]") {
  using tessera::comm::cpu_slice;
  const std::vector<int> sixteen = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  CHECK(cpu_slice(sixteen, 0, 2) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(cpu_slice(sixteen, 1, 2) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  const std::vector<int> odd = {2, 3, 5, 7, 11};  // a cgroup's cores need not be contiguous
  CHECK(cpu_slice(odd, 0, 3) == std::vector<int>{2, 3});
  CHECK(cpu_slice(odd, 1, 3) == std::vector<int>{5, 7});
  CHECK(cpu_slice(odd, 2, 3) == std::vector<int>{11});
  for (int ranks = 1; ranks <= 7; ++ranks) {  // every core handed out once
    std::vector<int> all;
    for (int r = 0; r < ranks; ++r) {
      const auto s = cpu_slice(sixteen, r, ranks);
      all.insert(all.end(), s.begin(), s.end());
    }
    CHECK(all == sixteen);
  }
  CHECK(cpu_slice({0, 1}, 3, 4) == std::vector<int>{1});  // more ranks than cores: one each, shared
  CHECK(cpu_slice(sixteen, 2, 2).empty());
}

TEST_CASE("the watchdog's bound: --timeout, else 30 s plus ten times the model's prediction", "[comm][watchdog]") {
  CHECK(comm::wait_bound(std::nullopt, 0.0) == 30.0);
  CHECK(comm::wait_bound(std::nullopt, 0.04) == 31.0);  // whole seconds, rounded up
  CHECK(comm::wait_bound(std::nullopt, 100.0) == 1030.0);
  CHECK(comm::wait_bound(std::nullopt, -1.0) == 30.0);  // no prediction
  CHECK(comm::wait_bound(5, 100.0) == 5.0);              // --timeout wins
  CHECK(comm::wait_bound(0, 100.0) == 0.0);              // --timeout 0: no bound
}
