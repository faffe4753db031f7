// The spread of repeated runs (report/repeats.hpp): min, median, max over the counted runs, per
// phase the slowest rank's time of each run, per rank its own; the JSON block the schema describes.
#include <catch2/catch_test_macros.hpp>

#include "report/repeats.hpp"

using tessera::report::Phases;
using tessera::report::Repeats;
using tessera::report::RunSample;
using tessera::report::spread;

TEST_CASE("spread: min, median (mean of the middle two of an even count), max", "[repeats]") {
  const auto odd = spread({0.3, 0.1, 0.2});
  CHECK(odd.min == 0.1);
  CHECK(odd.median == 0.2);
  CHECK(odd.max == 0.3);
  const auto even = spread({4.0, 1.0, 3.0, 2.0});
  CHECK(even.min == 1.0);
  CHECK(even.median == 2.5);
  CHECK(even.max == 4.0);
  const auto one = spread({7.0});
  CHECK((one.min == 7.0 && one.median == 7.0 && one.max == 7.0));
  const auto none = spread({});
  CHECK((none.min == 0 && none.median == 0 && none.max == 0));
}

TEST_CASE("repeats: a phase's time per run is its slowest rank's; each rank keeps its own", "[repeats]") {
  Repeats r;
  r.warmup = 1;
  // Two ranks, three runs; rank 1 is idle in the sense that it never reports "write".
  r.runs.push_back(RunSample{1.0, {Phases{{"read", 0.2}, {"write", 0.5}}, Phases{{"read", 0.4}}}});
  r.runs.push_back(RunSample{3.0, {Phases{{"read", 0.6}, {"write", 0.1}}, Phases{{"read", 0.3}}}});
  r.runs.push_back(RunSample{2.0, {Phases{{"read", 0.1}, {"write", 0.3}}, Phases{{"read", 0.2}}}});
  CHECK(r.repeated());
  CHECK(r.phase_names() == std::vector<std::string>{"read", "write"});
  CHECK(r.slowest("read") == std::vector<double>{0.4, 0.6, 0.2});
  CHECK(r.slowest("write") == std::vector<double>{0.5, 0.1, 0.3});
  CHECK(r.slowest("gather").empty());
  CHECK(r.of_rank(1, "read") == std::vector<double>{0.4, 0.3, 0.2});
  CHECK(r.of_rank(1, "write").empty());

  const nlohmann::json j = to_json(r);
  CHECK(j["runs"] == 3);
  CHECK(j["warmup"] == 1);
  CHECK(j["wall_seconds"]["samples"] == nlohmann::json({1.0, 3.0, 2.0}));
  CHECK(j["wall_seconds"]["median"] == 2.0);
  CHECK(j["phases"]["read"]["median"] == 0.4);
  CHECK(j["phases"]["read"]["max"] == 0.6);
  CHECK(j["ranks"].size() == 2);
  CHECK(j["ranks"][1]["rank"] == 1);
  CHECK(j["ranks"][1]["phases"]["read"]["min"] == 0.2);
  CHECK_FALSE(j["ranks"][1]["phases"].contains("write"));

  const std::string text = format_repeats(r);
  CHECK(text.find("median of 3 runs after 1 warm-up (") != std::string::npos);
  CHECK(text.find("  read            400.0 (200.0-600.0)\n") != std::string::npos);
}

TEST_CASE("repeats: one run without warm-ups is not a repetition", "[repeats]") {
  Repeats r;
  r.runs.push_back(RunSample{1.0, {}});
  CHECK_FALSE(r.repeated());
  r.warmup = 1;
  CHECK(r.repeated());
}
