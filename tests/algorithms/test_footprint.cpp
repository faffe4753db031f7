// The footprint model in-process (algorithms/footprint.hpp): what each algorithm's ranks hold,
// read, move and write, the bands of C, summa's panel width within MPI's int counts, and the
// machine model read from data.
#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/machine.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"

using tessera::DType;
using tessera::InputError;
namespace alg = tessera::algorithms;

namespace {

alg::Problem problem(std::int64_t m, std::int64_t n, std::int64_t k, int ranks, DType dtype = DType::f64) {
  return {m, n, k, dtype, ranks, tessera::partition::choose_grid(m, n, k, ranks)};
}

// Ranks on GPUs joined by NCCL, or on CPUs; C in place or gathered.
alg::Environment environment(bool gpu, bool nccl, bool in_place = true) {
  alg::Environment env;
  env.gpu = gpu;
  env.nccl = nccl;
  env.in_place_write = in_place;
  return env;
}

// The footprint of `name` as it settles `asked` on `env`.
alg::Footprint of(const std::string& name, const alg::Problem& p, const alg::Environment& env = {},
                  const alg::MachineModel& m = {}, const alg::Asked& asked = {}) {
  const auto a = alg::make_algorithm(name);
  return alg::footprint(*a, p, a->settle(asked, p, env, m), m);
}

}  // namespace

TEST_CASE("panels: a rank holds its A rows, B columns and C block, and writes its block", "[algorithms][footprint]") {
  const auto p = problem(100, 60, 30, 2);  // a 2x1 grid of 50 x 60 blocks
  REQUIRE(p.grid == (tessera::partition::GridShape{2, 1}));
  const auto panels = alg::make_algorithm("panels");
  const auto f = panels->rank_footprint(p, {}, {}, 1);
  CHECK(f.host_bytes == (50 * 30 + 30 * 60 + 50 * 60) * 8);
  CHECK(f.read_bytes == (50 * 30 + 30 * 60) * 8);
  CHECK(f.write_bytes == 50 * 60 * 8);
  CHECK(f.send_bytes == 0);
  alg::Setting gather;
  gather.in_place_write = false;
  CHECK(panels->rank_footprint(p, gather, {}, 1).send_bytes == 50 * 60 * 8);
  CHECK(panels->rank_footprint(p, gather, {}, 1).write_bytes == 0);
  // Rank 0 gathers: a spare buffer for the blocks that arrive while it writes.
  CHECK(of("panels", p, environment(false, false, false)).root.host_bytes > of("panels", p).root.host_bytes);
}

TEST_CASE("every rank reads and writes its share once: totals cover A, B and C", "[algorithms][footprint]") {
  const auto p = problem(96, 80, 64, 4);
  for (const char* name : {"summa", "ksplit"}) {
    const auto f = of(name, p);
    CHECK(f.total_read_bytes == (96 * 64 + 64 * 80) * 8);  // each input word read by one rank
    std::int64_t written = 0;
    const auto a = alg::make_algorithm(name);
    for (int r = 0; r < f.busy; ++r) written += a->rank_footprint(p, f.setting, {}, r).write_bytes;
    CHECK(written == 96 * 80 * 8);  // in place: C's rows, each by one rank
  }
}

TEST_CASE("summa narrows its panels to MPI's int counts on the MPI paths only", "[algorithms][footprint]") {
  // Blocks of 2^19 rows of float64: a 1024-wide panel would hold 2^32 bytes.
  const std::int64_t side = std::int64_t{1} << 20;
  const alg::Problem p{side, side, 4096, DType::f64, 4, {2, 2}};
  alg::Asked one_band;
  one_band.bands = 1;
  const auto summa = alg::make_algorithm("summa");
  const alg::Setting host = summa->settle(one_band, p, environment(true, false), {});
  const alg::Setting nccl = summa->settle(one_band, p, environment(true, true), {});
  REQUIRE(host.comm == tessera::comm::Path::host);
  REQUIRE(nccl.comm == tessera::comm::Path::nccl);
  const std::int64_t rows = side / 2, c = rows * rows * 8;
  const std::int64_t narrowed = INT_MAX / (rows * 8);  // 511
  CHECK(host.panel_width == narrowed);
  CHECK(nccl.panel_width == 1024);
  const auto on_host = summa->rank_footprint(p, host, {}, 0), on_nccl = summa->rank_footprint(p, nccl, {}, 0);
  const std::int64_t cs =
      (tessera::backend::gpu_kernel_accumulates(host.kernel, DType::f64) ? 1 : 2) * c;  // a scratch C?
  CHECK(on_host.gpu_bytes == cs + 2 * (rows + rows) * narrowed * 8);
  CHECK(on_nccl.gpu_bytes == cs + 2 * (rows + rows) * 1024 * 8 + 2 * alg::MachineModel{}.nccl_gpu_bytes_per_comm);
}

TEST_CASE("large C blocks are computed in bands, written in place while the next computes", "[algorithms][footprint]") {
  const auto big = problem(32768, 32768, 32768, 2, DType::f32);
  const alg::Environment gpu = environment(true, true);
  const auto ksplit = of("ksplit", big, gpu);
  CHECK(ksplit.setting.bands >= 2);
  CHECK(ksplit.root.write_bytes == big.c_bytes() / 2);  // its own rows: nothing funnels through rank 0
  CHECK(ksplit.root.write_seconds <
        static_cast<double>(ksplit.root.write_bytes) / alg::MachineModel{}.write_bytes_per_s);
  // Gathered: C in one piece, summed onto rank 0, which writes it all.
  const auto to_root = of("ksplit", big, environment(true, true, false));
  CHECK(to_root.setting.bands == 1);
  CHECK(to_root.root.write_bytes == big.c_bytes());
  // Small C: one band.
  CHECK(of("summa", problem(512, 512, 512, 4)).setting.bands == 1);
  CHECK(of("summa", problem(65536, 65536, 1024, 4), gpu).setting.bands >= 2);
}

TEST_CASE("the prediction names the phase that bounds the run", "[algorithms][footprint]") {
  alg::MachineModel slow_disk;
  slow_disk.read_bytes_per_s = 1e6;
  CHECK(of("panels", problem(2000, 2000, 2000, 1), {}, slow_disk).predicted.bound() == "read");
  alg::MachineModel slow_start;
  slow_start.startup_seconds = 100;
  CHECK(of("panels", problem(64, 64, 64, 1), {}, slow_start).predicted.bound() == "start-up");
  const auto f = of("panels", problem(64, 64, 64, 1));
  CHECK(f.predicted_seconds() == f.predicted.startup + f.predicted.read + f.predicted.compute + f.predicted.write);
}

TEST_CASE("a compressed C costs rank 0 its compression: gzip and lz4 over its threads, bzip2 on one",
          "[algorithms][footprint]") {
  alg::MachineModel m;
  m.gzip_bytes_per_s_per_thread = 50e6, m.lz4_bytes_per_s = 500e6, m.bzip2_bytes_per_s = 5e6;
  alg::Problem p = problem(4000, 5000, 100, 2, DType::f32);  // C: 80 MB
  const auto plain = of("panels", p, environment(false, false, false), m);
  CHECK(plain.predicted.compress == 0);
  p.compression = "gzip", p.compress_threads = 4;
  const auto gzip = of("panels", p, environment(false, false, false), m);
  CHECK(gzip.predicted.compress == 80e6 / (4 * 50e6));
  CHECK(gzip.predicted.write >= gzip.predicted.compress);
  CHECK(gzip.predicted.write >= plain.predicted.write);
  p.compress_threads = 1;
  CHECK(of("panels", p, environment(false, false, false), m).predicted.compress == 80e6 / 50e6);
  p.compression = "lz4", p.compress_threads = 8;  // tessera's threads (io::compression_threads)
  CHECK(of("panels", p, environment(false, false, false), m).predicted.compress == 80e6 / (8 * 500e6));
  p.compress_threads = 1;  // HDF5's pipeline (a build without liblz4)
  CHECK(of("panels", p, environment(false, false, false), m).predicted.compress == 80e6 / 500e6);
  p.compression = "bzip2", p.compress_threads = 8;  // HDF5's pipeline: one thread whatever the pool
  const auto bzip2 = of("panels", p, environment(false, false, false), m);
  CHECK(bzip2.predicted.compress == 80e6 / 5e6);
  CHECK(bzip2.predicted.bound() == "write");
  // The rates are machine-file keys.
  const auto read =
      alg::MachineModel::from_json({{"gzip_bytes_per_s_per_thread", 1e8}, {"bzip2_bytes_per_s", 2e7}}, "test");
  CHECK(read.gzip_bytes_per_s_per_thread == 1e8);
  CHECK(read.bzip2_bytes_per_s == 2e7);
  CHECK(read.to_json().at("lz4_bytes_per_s").get<double>() == alg::MachineModel{}.lz4_bytes_per_s);
}

TEST_CASE("the machine model is data: defaults, a file's fields, refusals", "[algorithms][machine]") {
  const alg::MachineModel built_in;
  const auto same = alg::MachineModel::from_json(built_in.to_json(), "round trip");
  CHECK(same.to_json() == built_in.to_json());
  const auto m = alg::MachineModel::from_json({{"name", "test"}, {"read_bytes_per_s", 7e9}, {"comment", "x"}}, "t");
  CHECK(m.name == "test");
  CHECK(m.read_bytes_per_s == 7e9);
  CHECK(m.write_bytes_per_s == built_in.write_bytes_per_s);
  CHECK_THROWS_AS(alg::MachineModel::from_json({{"read_bytes_per_sec", 7e9}}, "t"), InputError);
  CHECK_THROWS_AS(alg::MachineModel::from_json({{"read_bytes_per_s", -1}}, "t"), InputError);
  CHECK_THROWS_AS(alg::MachineModel::load("/nonexistent/machine.json"), InputError);
  CHECK_THROWS_AS(alg::MachineModel::load("no-such-machine"), InputError);
  CHECK(m.flops(true, DType::f32) == built_in.gpu_flops_f32);
  // "default" (a name --help lists) works where no default.json is found, e.g. run outside the
  // repository from a build that is not installed: the same numbers are built in.
  const auto here = std::filesystem::current_path();
  const auto empty = std::filesystem::temp_directory_path() / ("tessera-no-machines-" + std::to_string(::getpid()));
  std::filesystem::create_directories(empty);
  std::filesystem::current_path(empty);
  const auto named_default = alg::MachineModel::load("default");
  std::filesystem::current_path(here);
  std::filesystem::remove_all(empty);
  CHECK(named_default.name == "default");
  CHECK(named_default.read_bytes_per_s == built_in.read_bytes_per_s);
  CHECK(named_default.startup_seconds == built_in.startup_seconds);
}

TEST_CASE("a machine file names the GPUs it was measured on; unnamed runs there take it", "[algorithms][machine]") {
  const nlohmann::json match = {{"gpu", "H200"}, {"gpus", 2}};
  CHECK(alg::MachineModel::matches(match, {"0: NVIDIA H200 (sm_90, 139.8 GiB)", 2}));
  CHECK_FALSE(alg::MachineModel::matches(match, {"0: NVIDIA H200 (sm_90, 139.8 GiB)", 1}));
  CHECK_FALSE(alg::MachineModel::matches(match, {"0: NVIDIA H100 80GB HBM3", 2}));
  CHECK_FALSE(alg::MachineModel::matches(match, {}));
  CHECK(alg::MachineModel::from_json({{"match", match}, {"read_bytes_per_s", 7e9}}, "t").read_bytes_per_s == 7e9);
  CHECK_THROWS_AS(alg::MachineModel::from_json({{"match", "H200"}}, "t"), InputError);
  CHECK_THROWS_AS(alg::MachineModel::from_json({{"match", {{"gpu", "H200"}}}}, "t"), InputError);
  CHECK_THROWS_AS(alg::MachineModel::from_json({{"match", {{"gpu", "H200"}, {"gpus", 0}}}}, "t"), InputError);
  if (const char* env = std::getenv("TESSERA_MACHINE_FILE"); env && *env) SKIP("TESSERA_MACHINE_FILE is set");
  // configs/machines under the working directory: the file that matches, else default.json.
  const auto here = std::filesystem::current_path();
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-machines-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "configs/machines");
  std::ofstream(dir / "configs/machines/default.json") << R"({"name": "default", "read_bytes_per_s": 1e9})";
  std::ofstream(dir / "configs/machines/two-h200.json")
      << R"({"name": "two-h200", "match": {"gpu": "H200", "gpus": 2}, "read_bytes_per_s": 4e9})";
  std::filesystem::current_path(dir);
  const auto two = alg::MachineModel::load("", {"0: NVIDIA H200", 2});
  const auto one = alg::MachineModel::load("", {"0: NVIDIA H200", 1});
  const auto cpu = alg::MachineModel::load("", {});
  const auto named = alg::MachineModel::load("default", {"0: NVIDIA H200", 2});
  std::filesystem::current_path(here);
  std::filesystem::remove_all(dir);
  CHECK(two.name == "two-h200");
  CHECK(two.read_bytes_per_s == 4e9);
  CHECK(one.name == "default");
  CHECK(cpu.name == "default");
  CHECK(named.name == "default");  // a named file wins over the match
}

// Across nodes (Problem::ranks_per_node): summa's panels and panels' gathered blocks through each
// node's link at the machine's internode rate; one node predicts what it always did.
TEST_CASE("across nodes: panels cross the nodes' links at the internode rate", "[algorithms][footprint][nodes]") {
  alg::MachineModel m;
  m.internode_bytes_per_s = 25e6;  // a 200 Mbit/s link
  m.internode_latency_seconds = 0;
  const alg::Environment cpu;  // CPUs, host MPI, C in place
  const auto summa = alg::make_algorithm("summa");
  // summa's Setting on CPUs for p (panel width, bands), as settle() makes it.
  const auto on_cpu = [&](const alg::Problem& p) { return summa->settle({}, p, cpu, m); };
  // summa on a 2x1 grid, one rank per node: B's panels (K x N, all of B) go down the column,
  // through the link once; nothing along the rows (one rank each).
  auto p = problem(256, 256, 12000, 2);
  p.grid = {2, 1};
  const double alone = summa->rank_footprint(p, on_cpu(p), m, 1).compute_seconds;
  p.ranks_per_node = 1;
  const auto f = summa->rank_footprint(p, on_cpu(p), m, 1);
  const double b_bytes = 12000.0 * 256 * 8;
  CHECK(f.comm_seconds == b_bytes / m.internode_bytes_per_s);
  CHECK(f.internode_bytes == static_cast<std::int64_t>(b_bytes));
  CHECK(f.compute_seconds > alone);  // the CPU multiplies after each panel arrives
  CHECK(of("summa", p, cpu, m).predicted.communication == f.comm_seconds);
  // 2 ranks per node, a 2x2 grid: the rows stay in their node (shared memory), the two columns
  // cross it, both through the same link.
  auto q = problem(384, 384, 8000, 4);
  q.grid = {2, 2};
  q.ranks_per_node = 2;
  const auto g = summa->rank_footprint(q, on_cpu(q), m, 3);
  const double col = 8000.0 * 192 * 8, row_in = 192.0 * 4000 * 8;
  CHECK(g.comm_seconds == (2 * col) / m.internode_bytes_per_s + row_in / m.network_bytes_per_s);
  // 4 nodes down one column of 4 ranks: Open MPI's MPI_Ibcast sends from the owner to each of
  // the other 3 (linear up to 4 ranks), all through the owner's link.
  auto r = problem(256, 256, 6000, 4);
  r.grid = {4, 1};
  r.ranks_per_node = 1;
  CHECK(summa->rank_footprint(r, on_cpu(r), m, 2).comm_seconds == 3 * 6000.0 * 256 * 8 / m.internode_bytes_per_s);
  // 8 nodes, panels of 64 KiB and more: a chain from rank to rank, 7 crossings.
  auto c8 = problem(256, 256, 6000, 8);
  c8.grid = {8, 1};
  c8.ranks_per_node = 1;
  CHECK(summa->rank_footprint(c8, on_cpu(c8), m, 5).comm_seconds == 7 * 6000.0 * 256 * 8 / m.internode_bytes_per_s);
  // Every rank on one node: as before.
  q.ranks_per_node = 4;
  CHECK_FALSE(q.multi_node());
  auto one = q;
  one.ranks_per_node = 0;
  CHECK(of("summa", q, cpu, m).predicted_seconds() == of("summa", one, cpu, m).predicted_seconds());
  // panels gathered: rank 0 receives the block of the other node through its link.
  auto pg = problem(3000, 1000, 16, 2);
  pg.grid = {2, 1};
  pg.ranks_per_node = 1;
  CHECK(of("panels", pg, environment(false, false, false), m).predicted.communication ==
        1500.0 * 1000 * 8 / m.internode_bytes_per_s);
}

TEST_CASE("the machine file's internode keys", "[algorithms][machine][nodes]") {
  const auto m = alg::MachineModel::from_json(
      nlohmann::json{{"internode_bytes_per_s", 1.2e9}, {"internode_latency_seconds", 1.5e-6}}, "test");
  CHECK(m.internode_bytes_per_s == 1.2e9);
  CHECK(m.internode_latency_seconds == 1.5e-6);
  CHECK(m.to_json().contains("internode_bytes_per_s"));
}
