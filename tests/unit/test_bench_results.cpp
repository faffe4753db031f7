// `tessera bench`'s ratios (commands/bench_results.hpp): each row's "% vendor" is against the
// fastest vendor call of its size and dtype that passed its accuracy check, was given the same
// inputs and rounds them no more; the table and the JSON name that call. Host only.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "commands/bench_results.hpp"

namespace {

using namespace tessera;
using commands::bench::DeviceInfo;
using commands::bench::Row;

// A row that ran `ms` milliseconds (every launch) with relative error `err`.
Row ran(const std::string& kernel, double ms, bool vendor, double u_in, double err = 1e-7, bool bf16_inputs = false) {
  Row r({256, 256, 256}, DType::f32, kernel);
  r.vendor = vendor;
  r.input_unit_roundoff = u_in;
  r.bf16_inputs = bf16_inputs;
  r.tol = commands::bench::tolerance(DType::f32, u_in);
  r.seconds = {ms * 1e-3, ms * 1e-3, ms * 1e-3};
  r.rel_error = err;
  return r;
}

const Row& row(const std::vector<Row>& rows, const std::string& kernel) {
  for (const Row& r : rows)
    if (r.kernel == kernel) return r;
  FAIL("no row " << kernel);
  return rows.front();
}

DeviceInfo gpu() {
  DeviceInfo info;
  info.backend = "cuda";
  info.naive_kernel = "naive";
  info.vendor_kernel = "cublas";
  info.vendor_label = "cuBLAS";
  return info;
}

constexpr double kTf32 = 0x1p-11, kBf16 = 0x1p-8;

}  // namespace

TEST_CASE("bench: % vendor is against the fastest honest vendor call for the same inputs and accuracy", "[bench]") {
  std::vector<Row> rows{
      ran("naive", 40.0, false, 0),
      ran("warptile", 11.0, false, 0),
      ran("tf32-wgmma", 1.1, false, kTf32, 2.6e-4),
      ran("bf16-wgmma", 0.8, false, kBf16, 2.1e-3),
      ran("cublas", 10.0, true, 0),
      ran("cublas-tf32", 1.0, true, kTf32, 2.6e-4),
      ran("cublas-bf16", 0.9, true, kBf16, 2.1e-3),
      ran("cublas-bf16-stored", 0.6, true, kBf16, 2.1e-3, true),
  };
  commands::bench::finish(rows, gpu());

  // FP32: only the exact call qualifies, however fast the rounding ones are.
  CHECK(row(rows, "warptile").baseline == "cublas");
  CHECK(row(rows, "warptile").pct_vendor == Catch::Approx(100.0 * 10.0 / 11.0));
  CHECK(row(rows, "warptile").x_naive == Catch::Approx(40.0 / 11.0));
  // TF32: cublas-tf32 (cublas is as accurate but slower; the BF16 calls round more).
  CHECK(row(rows, "tf32-wgmma").baseline == "cublas-tf32");
  // BF16 on float32 data: the call that rounds float32 itself, not the BF16-stored GEMM.
  CHECK(row(rows, "bf16-wgmma").baseline == "cublas-bf16");
  CHECK(row(rows, "bf16-wgmma").pct_vendor == Catch::Approx(100.0 * 0.9 / 0.8));
  // The BF16-stored GEMM is given other inputs: compared with itself only.
  CHECK(row(rows, "cublas-bf16-stored").baseline == "cublas-bf16-stored");
  CHECK(row(rows, "cublas").pct_vendor == Catch::Approx(100.0));

  const std::string table = commands::bench::format_table(rows, gpu());
  CHECK(table.find("vs") != std::string::npos);
  CHECK(table.find("SM MHz") == std::string::npos);  // no clocks recorded: no clock columns
}

TEST_CASE("bench: a faster, more accurate call is the bar; one that failed its check is none", "[bench]") {
  std::vector<Row> rows{
      ran("bf16-wgmma", 0.8, false, kBf16, 2.1e-3),
      ran("cublas-tf32", 0.7, true, kTf32, 2.6e-4),
      ran("cublas-bf16", 0.9, true, kBf16, 2.1e-3),
      ran("warptile", 11.0, false, 0),
      ran("cublas", 5.0, true, 0, 1.0),  // wrong: fails its accuracy check
  };
  commands::bench::finish(rows, gpu());
  CHECK(row(rows, "bf16-wgmma").baseline == "cublas-tf32");
  CHECK(row(rows, "cublas").status == "FAIL");
  CHECK(row(rows, "warptile").baseline.empty());
  CHECK(std::isnan(row(rows, "warptile").pct_vendor));

  const nlohmann::json doc = commands::bench::to_json(rows, gpu(), commands::BenchOptions{});
  bool found = false;
  for (const auto& r : doc["results"]) {
    if (r["kernel"] != "bf16-wgmma") continue;
    found = true;
    CHECK(r["baseline"] == "cublas-tf32");
    CHECK(r["sm_clock_mhz"].is_null());  // nothing sampled
  }
  CHECK(found);
  CHECK(doc["telemetry"]["recorded"] == false);
}

TEST_CASE("bench: clock and power columns when they were recorded", "[bench]") {
  std::vector<Row> rows{ran("cublas", 10.0, true, 0)};
  rows[0].telemetry = backend::summarize({{1980, 690}, {1965, 700}, {1980, 705}});
  DeviceInfo info = gpu();
  info.telemetry.recorded = true;
  commands::bench::finish(rows, info);
  const std::string table = commands::bench::format_table(rows, info);
  CHECK(table.find("SM MHz") != std::string::npos);
  CHECK(table.find(" 1980 ") != std::string::npos);
  CHECK(table.find(" 700 ") != std::string::npos);
  const nlohmann::json doc = commands::bench::to_json(rows, info, commands::BenchOptions{});
  CHECK(doc["results"][0]["sm_clock_mhz"]["min"] == 1965.0);
  CHECK(doc["results"][0]["power_w"]["max"] == 705.0);
  CHECK(doc["results"][0]["telemetry_samples"] == 3);
}
