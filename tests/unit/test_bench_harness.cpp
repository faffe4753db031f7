// The timing harness `tessera bench` and `tessera tune` share (commands/bench_harness.hpp): the
// options they parse alike, the inputs, the accuracy measure, and how launches are counted.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "commands/bench_harness.hpp"
#include "core/error.hpp"

using namespace tessera;
using namespace tessera::commands::bench;

TEST_CASE("bench and tune parse dtypes and sizes alike, naming the subcommand", "[bench]") {
  CHECK(parse_dtypes({}, "tune") == std::vector<DType>{DType::f32, DType::f64});
  CHECK(parse_dtypes({"float64", "f32"}, "bench") == std::vector<DType>{DType::f64, DType::f32});
  try {
    parse_dtype("f16", "tune");
    FAIL("f16 was taken");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "tune: dtype 'f16' is not one of: f32, f64");
  }
  const std::vector<Size> sizes = parse_sizes({}, {"64", "3x5x7"}, "bench");
  REQUIRE(sizes.size() == 2);
  CHECK((sizes[0].m == 64 && sizes[0].n == 64 && sizes[0].k == 64));
  CHECK((sizes[1].m == 3 && sizes[1].n == 5 && sizes[1].k == 7));
  CHECK(parse_sizes({"9"}, {"64"}, "bench").front().k == 9);
  CHECK_THROWS_AS(parse_sizes({"0"}, {}, "tune"), InputError);
}

TEST_CASE("the timing options are checked the same way for both", "[bench]") {
  const Timing t = checked_timing(0, 1, "bench");
  CHECK((t.warmup == 0 && t.repeats == 1 && std::isinf(t.give_up_after_s)));
  CHECK_THROWS_AS(checked_timing(1, 0, "tune"), InputError);
  CHECK_THROWS_AS(checked_timing(-1, 3, "bench"), InputError);
}

TEST_CASE("the inputs: uniform between -1 and 1, reproducible, different per seed and per size", "[bench]") {
  const Size s{17, 5, 9};
  const Inputs in(s, 42);
  REQUIRE(in.a.size() == 17 * 9);
  REQUIRE(in.b.size() == 9 * 5);
  double lo = 1, hi = -1, sum = 0;
  for (const double v : in.a) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  CHECK((lo >= -1 && hi < 1 && lo < -0.5 && hi > 0.5));  // spread over the interval
  CHECK(std::abs(sum / static_cast<double>(in.a.size())) < 0.2);
  CHECK(Inputs(s, 42).a == in.a);
  CHECK(Inputs(s, 43).a != in.a);
  const Inputs other_k(Size{17, 5, 10}, 42);
  CHECK(std::vector<double>(other_k.a.begin(), other_k.a.begin() + 45) !=
        std::vector<double>(in.a.begin(), in.a.begin() + 45));
  CHECK(std::vector<double>(in.a.begin(), in.a.begin() + 45) != in.b);  // A and B are not the same numbers
}

TEST_CASE("the relative Frobenius error, against a reference of either type", "[bench]") {
  const std::vector<double> ref{3, 4};
  CHECK(rel_frobenius_error(std::vector<float>{3, 4}, ref) == 0);
  CHECK(std::abs(rel_frobenius_error(std::vector<double>{3, 4.5}, ref) - 0.1) < 1e-15);
  CHECK(std::abs(rel_frobenius_error(std::vector<float>{0.5f, 0}, std::vector<float>{0, 0}) - 0.5) < 1e-15);
  CHECK(std::isnan(rel_frobenius_error(std::vector<double>{NAN, 4}, ref)));
}

TEST_CASE("host timing: the warm-up launches untimed, one time per timed launch, fewer past the limit", "[bench]") {
  int launches = 0;
  const std::vector<double> times = time_on_host(Timing{2, 5}, [&] { ++launches; });
  CHECK(launches == 7);
  REQUIRE(times.size() == 5);
  for (const double t : times) CHECK(t >= 0);

  launches = 0;
  const std::vector<double> cut = time_on_host(Timing{1, 5, -1.0}, [&] { ++launches; });  // any time exceeds -1 s
  CHECK(launches == 2);
  CHECK(cut.size() == 1);
}
