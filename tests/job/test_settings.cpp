// Decide once (issue 28): the dry run prints the very Setting the run runs with. For every
// algorithm (the test's own one-rank among them, tests/job/one_rank.cpp) and `auto`, on 1-4 MPI
// ranks, over odd shapes and a spread of options, the dry run's "settings" (Algorithm::describe)
// equal the run's report's, and a choice the dry run refuses the run refuses too. Then the
// test's own algorithm end to end: chosen by `auto` where the model favours it, run, reported,
// and refused where it cannot honour an option.
#include <mpi.h>
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "comm/comm.hpp"
#include "commands/dry_run.hpp"
#include "io/hdf5_io.hpp"
#include "job/environment.hpp"
#include "job/run_job.hpp"

namespace comm = tessera::comm;
namespace io = tessera::io;
using tessera::DType;

namespace {

struct Shape {
  std::int64_t m, n, k;
  std::string tag() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};
const Shape kShapes[] = {{23, 17, 19}, {5, 41, 7}, {64, 9, 33}};

double a_value(const Shape& s, std::int64_t i, std::int64_t p) {
  return std::sin(0.3 * static_cast<double>(i * s.k + p));
}
double b_value(const Shape& s, std::int64_t p, std::int64_t j) {
  return std::cos(0.7 * static_cast<double>(p * s.n + j));
}

// A folder every rank sees (rank 0 makes it), with A and B of every shape written into it.
std::string shared_inputs(const comm::Comm& world) {
  std::string dir;
  if (world.rank() == 0) {
    char name[] = "/tmp/tessera-settings-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    dir = name;
    for (const Shape& s : kShapes) {
      std::vector<double> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
      for (std::int64_t i = 0; i < s.m; ++i)
        for (std::int64_t p = 0; p < s.k; ++p) a[static_cast<std::size_t>(i * s.k + p)] = a_value(s, i, p);
      for (std::int64_t p = 0; p < s.k; ++p)
        for (std::int64_t j = 0; j < s.n; ++j) b[static_cast<std::size_t>(p * s.n + j)] = b_value(s, p, j);
      io::MatrixWriter wa({dir + "/a-" + s.tag() + ".h5", "/A"}, s.m, s.k, DType::f64, {});
      wa.write_block(0, 0, s.m, s.k, a.data());
      wa.commit();
      io::MatrixWriter wb({dir + "/b-" + s.tag() + ".h5", "/B"}, s.k, s.n, DType::f64, {});
      wb.write_block(0, 0, s.k, s.n, b.data());
      wb.commit();
    }
  }
  return world.broadcast(dir, 0);
}

// The largest error of C against the product computed here, in float64.
double max_error(const Shape& s, const std::string& c_file) {
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n));
  io::read_block({c_file, "/C"}, 0, s.m, 0, s.n, DType::f64, c.data());
  double worst = 0;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < s.k; ++p) sum += a_value(s, i, p) * b_value(s, p, j);
      worst = std::max(worst, std::abs(c[static_cast<std::size_t>(i * s.n + j)] - sum));
    }
  return worst;
}

// The options a case varies: how C is written, its bands, summa's panel width, the path, the kernel.
struct Asked {
  std::string write = "auto";
  int bands = 0;
  std::int64_t panel_width = 0;
  std::string comm = "auto";
  std::string kernel = "auto";
};
const Asked kAsked[] = {{},
                        {"gather"},
                        {"auto", 2},
                        {"auto", 0, 5},
                        {"auto", 0, 0, "host"},
                        {"gather", 3, 0, "auto", "cpu-tiled"},
                        {"in-place", 16, 7, "host", "cpu-naive"}};

tessera::job::RunOptions options(const std::string& dir, const Shape& s, const std::string& algorithm, const Asked& a,
                                 const std::string& tag) {
  tessera::job::RunOptions o;
  o.a = dir + "/a-" + s.tag() + ".h5:/A";
  o.b = dir + "/b-" + s.tag() + ".h5:/B";
  o.c = dir + "/c-" + tag + ".h5:/C";
  o.backend = "cpu";
  o.algorithm = algorithm;
  o.write = a.write;
  o.panel_width = a.panel_width;
  o.comm = a.comm;
  o.kernel = a.kernel;
  o.quiet = true;
  o.progress = "off";
  if (a.bands > 0)
    setenv("TESSERA_BANDS", std::to_string(a.bands).c_str(), 1);
  else
    unsetenv("TESSERA_BANDS");
  return o;
}

// The dry run's plan and the run's report of one case, or null for a choice refused (on every rank).
struct Outcome {
  nlohmann::json plan, report;
};
Outcome plan_and_run(const comm::Comm& world, tessera::job::RunOptions o, const std::string& dir,
                     const std::string& tag) {
  Outcome out;
  o.report = dir + "/plan-" + tag + ".json";
  bool planned = true, ran = true;
  try {
    tessera::commands::dry_run(o, world);
  } catch (const comm::JobError&) {
    planned = false;
  }
  o.report = dir + "/run-" + tag + ".json";
  try {
    tessera::job::run_job(o, world);
  } catch (const comm::JobError&) {
    ran = false;
  }
  CHECK(planned == ran);  // the same refusals
  if (world.rank() != 0 || !planned || !ran) return out;
  out.plan = nlohmann::json::parse(std::ifstream(dir + "/plan-" + tag + ".json"));
  out.report = nlohmann::json::parse(std::ifstream(o.report));
  return out;
}

}  // namespace

TEST_CASE("the dry run's settings are the run's, for every algorithm, shape and option", "[job][mpi][settings]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const std::string dir = shared_inputs(world);
  std::vector<std::string> algorithms = tessera::algorithms::algorithm_names();
  algorithms.push_back("auto");
  REQUIRE(std::find(algorithms.begin(), algorithms.end(), "one-rank") != algorithms.end());
  int compared = 0;
  for (const std::string& algorithm : algorithms)
    for (const Shape& shape : kShapes)
      for (std::size_t i = 0; i < std::size(kAsked); ++i) {
        const std::string tag = algorithm + "-" + shape.tag() + "-" + std::to_string(i);
        INFO(tag << " on " << world.size() << " rank(s)");
        const Outcome out = plan_and_run(world, options(dir, shape, algorithm, kAsked[i], tag), dir, tag);
        if (out.plan.is_null()) continue;
        ++compared;
        CHECK(out.plan["algorithm"] == out.report["algorithm"]);
        CHECK(out.plan["settings"] == out.report["settings"]);
        CHECK(out.plan["comm"] == out.report["comm"]);
        CHECK(out.plan["grid"] == out.report["grid"]);
        CHECK(max_error(shape, dir + "/c-" + tag + ".h5") < 1e-12);
      }
  unsetenv("TESSERA_BANDS");
  if (world.rank() == 0) CHECK(compared >= 3 * static_cast<int>(algorithms.size()));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("a test's own algorithm: auto takes it where the model favours it, the run and the report name it",
          "[job][mpi][settings]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const std::string dir = shared_inputs(world);
  // Reads bound the run: one-rank, whose model claims free reads, is clearly the fastest.
  const std::string machine = dir + "/slow-reads.json";
  if (world.rank() == 0)
    std::ofstream(machine) << R"({"name": "slow-reads", "read_bytes_per_s": 1000, "startup_seconds": 1e-6})";
  MPI_Barrier(MPI_COMM_WORLD);
  const Shape shape = kShapes[0];
  tessera::job::RunOptions o = options(dir, shape, "auto", {}, "auto-one-rank");
  o.machine = machine;
  const Outcome out = plan_and_run(world, o, dir, "auto-one-rank");
  if (world.rank() == 0) {
    // One rank: the rule of thumb, no model to ask; more: the model's choice.
    const std::string expected = world.size() == 1 ? "panels" : "one-rank";
    CHECK(out.plan["algorithm"] == expected);
    CHECK(out.report["algorithm"] == expected);
    CHECK(out.plan["settings"] == out.report["settings"]);
    CHECK(out.report["ranks"].size() == static_cast<std::size_t>(world.size()));
    CHECK(max_error(shape, dir + "/c-auto-one-rank.h5") < 1e-12);
  }
  // An option it cannot honour: refused on every rank, nothing written.
  tessera::job::RunOptions refused = options(dir, shape, "one-rank", {"auto", 0, 8}, "refused");
  CHECK_THROWS_AS(tessera::job::run_job(refused, world), comm::JobError);
  if (world.rank() == 0) CHECK_FALSE(std::ifstream(dir + "/c-refused.h5").good());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}

// The environment is what the answering ranks have (Job::settle asks rank 0 alone first, so that
// ranks `auto` leaves idle start no GPU driver); the others say nothing. Rank 0 would compute on a
// GPU (--backend cuda: a key whether or not one is visible), the others on the CPU.
TEST_CASE("the environment is the answering ranks': the others say nothing", "[job][mpi][environment]") {
  const comm::Comm world(MPI_COMM_WORLD);
  tessera::algorithms::Asked asked;
  asked.backend = world.rank() == 0 ? tessera::backend::Kind::cuda : tessera::backend::Kind::cpu;
  const auto rank0 = tessera::job::agree_environment(asked, world, 1);
  CHECK(rank0.gpu);
  CHECK_FALSE(rank0.mixed);
  CHECK(rank0.shared_gpu_from == INT_MAX);
  const auto all = tessera::job::agree_environment(asked, world, world.size() + 5);  // at most every rank
  CHECK(all.gpu == (world.size() == 1));
  CHECK(all.mixed == (world.size() > 1));
}
