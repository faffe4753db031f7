// The pieces streaming rests on, without MPI or files: the non-finite scan (fast path and the
// count with the first position) and RowProgress between a producer and a waiting thread.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "job/refusals.hpp"

using tessera::DType;
using tessera::backend::RowProgress;
using tessera::backend::RowsAbandoned;
using tessera::job::scan_nonfinite;

namespace {

template <class T>
void check_scan(DType dtype) {
  // Large enough (2^25 elements) that the fast check runs on several threads.
  const std::int64_t rows = 4096, cols = 8192;
  std::vector<T> data(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(static_cast<double>(i % 977) - 488.5);
  auto s = scan_nonfinite(data.data(), dtype, rows, cols, 10, 3, 9000);
  CHECK(s.count == 0);
  // Planted in the last thread's part, then earlier ones: the count and the first position.
  const std::size_t late = data.size() - 5, early = 12345;
  data[late] = std::numeric_limits<T>::infinity();
  s = scan_nonfinite(data.data(), dtype, rows, cols, 10, 3, 9000);
  CHECK(s.count == 1);
  const auto at = [&](std::size_t i) {
    return static_cast<double>((10 + static_cast<std::int64_t>(i) / cols) * 9000 + 3 +
                               static_cast<std::int64_t>(i) % cols);
  };
  CHECK(s.first == at(late));
  data[early] = std::numeric_limits<T>::quiet_NaN();
  data[early + 1] = -std::numeric_limits<T>::infinity();
  s = scan_nonfinite(data.data(), dtype, rows, cols, 10, 3, 9000);
  CHECK(s.count == 3);
  CHECK(s.first == at(early));
  // The largest finite values and denormals are finite.
  data[late] = std::numeric_limits<T>::max();
  data[early] = -std::numeric_limits<T>::max();
  data[early + 1] = std::numeric_limits<T>::denorm_min();
  CHECK(scan_nonfinite(data.data(), dtype, rows, cols, 0, 0, cols).count == 0);
}

}  // namespace

TEST_CASE("scan_nonfinite counts NaN and Inf and finds the first, float32 and float64", "[unit][streaming]") {
  check_scan<float>(DType::f32);
  check_scan<double>(DType::f64);
  const float one = std::nanf("");
  CHECK(scan_nonfinite(&one, DType::f32, 1, 1, 0, 0, 1).count == 1);
  CHECK(scan_nonfinite(&one, DType::f32, 0, 1, 0, 0, 1).count == 0);
}

TEST_CASE("RowProgress hands rows from a producer to a waiting thread, in order", "[unit][streaming]") {
  RowProgress rows;
  std::vector<std::int64_t> seen;
  std::thread consumer([&] {
    for (std::int64_t have = 0; have < 100;) {
      have = rows.wait_for(have + 1);
      seen.push_back(have);
    }
  });
  for (std::int64_t r = 10; r <= 100; r += 10) rows.publish(r);
  rows.publish(50);  // never goes back
  consumer.join();
  REQUIRE(!seen.empty());
  CHECK(seen.back() == 100);
  for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] > seen[i - 1]);
  CHECK(rows.wait_for(100) == 100);
}

TEST_CASE("RowProgress wakes a waiter with RowsAbandoned when the producer gives up", "[unit][streaming]") {
  RowProgress rows;
  rows.publish(3);
  bool threw = false;
  std::thread waiter([&] {
    try {
      rows.wait_for(4);
    } catch (const RowsAbandoned&) {
      threw = true;
    }
  });
  rows.abandon();
  waiter.join();
  CHECK(threw);
  CHECK(rows.abandoned());
  CHECK(rows.wait_for(3) == 3);  // rows already there stay usable
}
