// The whole job in-process on 1-4 MPI ranks (COSMA's tests/multiply.cpp style: this executable's
// main initialises MPI; add_mpi_catch_test runs it under mpiexec): run_job with every algorithm,
// C written in place and gathered, in one piece and in bands, checked against a float64 product
// computed here, and the report each run writes.
#include <mpi.h>
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/comm.hpp"
#include "io/hdf5_io.hpp"
#include "job/run_job.hpp"

namespace comm = tessera::comm;
namespace io = tessera::io;
using tessera::DType;

namespace {

constexpr std::int64_t kM = 23, kN = 17, kK = 19;  // odd: uneven blocks, bands and pieces

double a_value(std::int64_t i, std::int64_t p) { return std::sin(0.3 * static_cast<double>(i * kK + p)); }
double b_value(std::int64_t p, std::int64_t j) { return std::cos(0.7 * static_cast<double>(p * kN + j)); }

// A folder every rank sees (rank 0 makes it), with A and B written into it.
std::string shared_inputs(const comm::Comm& world) {
  std::string dir;
  if (world.rank() == 0) {
    char name[] = "/tmp/tessera-multiply-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    dir = name;
    std::vector<double> a(kM * kK), b(kK * kN);
    for (std::int64_t i = 0; i < kM; ++i)
      for (std::int64_t p = 0; p < kK; ++p) a[static_cast<std::size_t>(i * kK + p)] = a_value(i, p);
    for (std::int64_t p = 0; p < kK; ++p)
      for (std::int64_t j = 0; j < kN; ++j) b[static_cast<std::size_t>(p * kN + j)] = b_value(p, j);
    io::MatrixWriter wa({dir + "/a.h5", "/A"}, kM, kK, DType::f64, {});
    wa.write_block(0, 0, kM, kK, a.data());
    wa.commit();
    io::MatrixWriter wb({dir + "/b.h5", "/B"}, kK, kN, DType::f64, {});
    wb.write_block(0, 0, kK, kN, b.data());
    wb.commit();
  }
  return world.broadcast(dir, 0);
}

// The largest error of C against the product computed here, in float64.
double max_error(const std::string& c_file) {
  std::vector<double> c(kM * kN);
  io::read_block({c_file, "/C"}, 0, kM, 0, kN, DType::f64, c.data());
  double worst = 0;
  for (std::int64_t i = 0; i < kM; ++i)
    for (std::int64_t j = 0; j < kN; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < kK; ++p) sum += a_value(i, p) * b_value(p, j);
      worst = std::max(worst, std::abs(c[static_cast<std::size_t>(i * kN + j)] - sum));
    }
  return worst;
}

void multiply(const comm::Comm& world, const std::string& dir, const std::string& algorithm, const std::string& write,
              int bands) {
  const std::string tag = algorithm + "-" + write + "-" + std::to_string(bands);
  INFO(tag << " on " << world.size() << " rank(s)");
  if (bands > 0)
    setenv("TESSERA_BANDS", std::to_string(bands).c_str(), 1);
  else
    unsetenv("TESSERA_BANDS");
  tessera::job::RunOptions o;
  o.a = dir + "/a.h5:/A";
  o.b = dir + "/b.h5:/B";
  o.c = dir + "/c-" + tag + ".h5:/C";
  o.report = dir + "/r-" + tag + ".json";
  o.backend = "cpu";
  o.algorithm = algorithm;
  o.write = write;
  o.quiet = true;
  o.progress = "off";
  tessera::job::run_job(o, world);
  if (world.rank() != 0) return;
  CHECK(max_error(dir + "/c-" + tag + ".h5") < 1e-12);
  const auto report = nlohmann::json::parse(std::ifstream(o.report));
  CHECK(report["algorithm"] == algorithm);
  CHECK(report["ranks"].size() == static_cast<std::size_t>(world.size()));
  const std::string how = report["write"];
  CHECK(how.rfind(write == "gather" ? "gather" : "in place", 0) == 0);
  std::int64_t read = 0;
  for (const auto& rank : report["ranks"]) read += rank["read_bytes"].get<std::int64_t>();
  CHECK(read >= 8 * (kM * kK + kK * kN));  // every input word read, by one rank or more
}

}  // namespace

TEST_CASE("every algorithm multiplies in-process: C in place and gathered, in one piece and in bands", "[job][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const std::string dir = shared_inputs(world);
  for (const char* algorithm : {"panels", "summa", "ksplit"})
    for (const char* write : {"auto", "gather"}) multiply(world, dir, algorithm, write, 0);
  for (const char* algorithm : {"summa", "ksplit"}) multiply(world, dir, algorithm, "auto", 3);
  unsetenv("TESSERA_BANDS");
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("a bad choice is refused on every rank alike, and nothing is written", "[job][mpi]") {
  const comm::Comm world(MPI_COMM_WORLD);
  const std::string dir = shared_inputs(world);
  tessera::job::RunOptions o;
  o.a = dir + "/a.h5:/A";
  o.b = dir + "/b.h5:/B";
  o.c = dir + "/refused.h5:/C";
  o.backend = "cpu";
  o.algorithm = "ksplit";
  o.panel_width = 8;  // summa's option
  o.quiet = true;
  CHECK_THROWS_AS(tessera::job::run_job(o, world), comm::JobError);
  if (world.rank() == 0) CHECK_FALSE(std::ifstream(dir + "/refused.h5").good());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}
