// RankRecord::precision (issue 45): what a kernel chose at run time reaches the JSON report, comes
// back from it, and is printed under the table; absent where no kernel chose anything.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "report/report.hpp"

using namespace tessera::report;

TEST_CASE("report: a rank's precision note round-trips and is printed, absent when empty", "[report]") {
  RankRecord r;
  r.rank = 3;
  r.host = "node";
  r.device = "NVIDIA H200";
  r.active = true;
  r.phases = {{"read", 0.1}, {"compute", 0.2}, {"write", 0.1}};
  const nlohmann::json plain = to_json(r);
  CHECK_FALSE(plain.contains("precision"));
  CHECK(rank_from_json(plain).precision.empty());

  r.precision = "f64-ozaki: 16 moduli, rows of A to 54 bits, columns of B to 54";
  const nlohmann::json noted = to_json(r);
  REQUIRE(noted.contains("precision"));
  CHECK(noted["precision"] == r.precision);
  CHECK(rank_from_json(noted).precision == r.precision);

  JobReport job;
  job.m = job.n = job.k = 8;
  job.dtype = "f64";
  job.ranks = {r};
  const std::string table = format_table(job);
  CHECK(table.find("precision (rank 3): f64-ozaki: 16 moduli") != std::string::npos);
  job.ranks[0].precision.clear();
  CHECK(format_table(job).find("precision (rank") == std::string::npos);
}
