// The tune file and its lookup (backend/tuning.hpp): read, matched to the nearest tuned size,
// refused when it is not a tune file. Host only.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "backend/tuning.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

using tessera::DType;
using tessera::InputError;
namespace backend = tessera::backend;

// The tune file `tessera tune` writes and `--kernel auto` reads.
TEST_CASE("tune files are read and the nearest tuned size decides", "[tuning]") {
  const std::string path = "tessera-test-tune.json";
  {
    std::ofstream f(path);
    f << R"({"format": "tessera-tune-1", "device": "Test GPU", "choices": [
          {"dtype": "f32", "m": 1024, "n": 1024, "k": 1024, "kernel": "warptile-64x64", "gflops": 1},
          {"dtype": "f32", "m": 8192, "n": 8192, "k": 8192, "kernel": "warptile-128x128", "gflops": 2},
          {"dtype": "f64", "m": 4096, "n": 4096, "k": 4096, "kernel": "dmma", "gflops": 3}]})";
  }
  const backend::TuneTable t = backend::read_tune_file(path);
  CHECK(t.device == "Test GPU");
  REQUIRE(t.choices.size() == 3);
  CHECK(backend::tuned_kernel(t, DType::f32, 900, 1100, 1000) == "warptile-64x64");
  CHECK(backend::tuned_kernel(t, DType::f32, 5000, 9000, 7000) == "warptile-128x128");
  CHECK(backend::tuned_kernel(t, DType::f64, 10, 10, 10) == "dmma");
  CHECK(backend::sanitize_device_name("NVIDIA H200 [0000:1b:00.0]") == "NVIDIA_H200");
  {
    std::ofstream f(path);
    f << "{\"format\": \"something else\"}";
  }
  CHECK_THROWS_AS(backend::read_tune_file(path), InputError);
  std::remove(path.c_str());
  const backend::TuneTable empty;
  CHECK(backend::tuned_kernel(empty, DType::f32, 1, 1, 1).empty());
}

// The H200's table has an odd shape beside the cubes: it decides for shapes whose rows are not
// whole 16-byte chunks, the cubes for those whose rows are, whichever is nearer in size.
TEST_CASE("the tuned choice of the same row alignment decides", "[tuning]") {
  backend::TuneTable t;
  t.choices.push_back({DType::f64, 4096, 4096, 4096, "cublas", 61.8, {}});
  t.choices.push_back({DType::f64, 8192, 8192, 8192, "cublas", 56.5, {}});
  t.choices.push_back({DType::f64, 4099, 4097, 4095, "dmma8-sk", 47.4, {}});
  t.choices.push_back({DType::f32, 4096, 4096, 4096, "warptile-128x256", 47.0, {}});
  CHECK(backend::rows_aligned(DType::f64, 4096, 4096));
  CHECK_FALSE(backend::rows_aligned(DType::f64, 4097, 4095));
  CHECK(backend::rows_aligned(DType::f64, 4098, 4094));  // 8-byte elements: even counts suffice
  CHECK_FALSE(backend::rows_aligned(DType::f32, 4098, 4096));
  CHECK(backend::tuned_kernel(t, DType::f64, 4500, 4500, 4500) == "cublas");  // nearer the odd shape in size
  CHECK(backend::tuned_kernel(t, DType::f64, 4100, 4100, 4100) == "cublas");
  CHECK(backend::tuned_kernel(t, DType::f64, 4100, 4101, 4100) == "dmma8-sk");
  CHECK(backend::tuned_kernel(t, DType::f64, 9001, 9001, 9001) == "dmma8-sk");  // the only odd one
  CHECK(backend::tuned_kernel(t, DType::f64, 8000, 8000, 8000) == "cublas");
  CHECK(backend::tuned_kernel(t, DType::f32, 4099, 4097, 4095) == "warptile-128x256");  // no odd f32 choice
}

// `tessera tune` keeps cuBLAS where tessera's fastest kernel beats it by kOwnKernelMargin or less
// (the H200's 8192^3 f32: 21.39 against 21.54 ms), and takes the fastest otherwise.
TEST_CASE("tune keeps cuBLAS unless an own kernel beats it by the margin", "[tuning]") {
  CHECK(backend::tune_winner({}).empty());
  CHECK(backend::tune_winner({{"cublas", 21.54}, {"warptile-128x256-16x8", 21.39}, {"regtile", 37.4}}) == "cublas");
  CHECK(backend::tune_winner({{"cublas", 2.683}, {"warptile-128x256-16x8", 2.740}}) == "cublas");
  const double beaten = 1.0 / (1 + backend::kOwnKernelMargin) - 1e-6;  // just past the margin
  CHECK(backend::tune_winner({{"cublas", 1.0}, {"dmma8-sk", beaten}}) == "dmma8-sk");
  CHECK(backend::tune_winner({{"cublas", 1.0}, {"dmma8-sk", beaten + 2e-6}}) == "cublas");
  CHECK(backend::tune_winner({{"cublas", 40.7}, {"dmma8-sk", 34.9}, {"dmma8", 35.0}}) == "dmma8-sk");
  // Without cuBLAS among the correct ones (a build without it, or it disagreed): the fastest.
  CHECK(backend::tune_winner({{"warptile-64x64", 3.0}, {"warptile-128x128", 2.0}}) == "warptile-128x128");
  // A time that is not a time (NaN, 0, infinite) never wins, cuBLAS's included.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(backend::tune_winner({{"cublas", nan}, {"warptile-128x128", 2.0}}) == "warptile-128x128");
  CHECK(backend::tune_winner({{"cublas", 1.0}, {"dmma8", 0.0}, {"dmma8-sk", inf}}) == "cublas");
  CHECK(backend::tune_winner({{"cublas", nan}}).empty());
}

// `auto` decides by the whole job (issue 39): a library's load counts against its kernel's time.
TEST_CASE("the whole job's kernel: cuBLAS's load weighed against the kernels' rates", "[tuning]") {
  backend::TunedChoice c;
  c.dtype = DType::f32;
  c.m = c.n = c.k = 8192;
  c.kernel = "cublas";  // kept by the 3% margin
  c.gflops = 51035;
  c.candidates = {{"cublas", 51035}, {"warptile-a", 51408}, {"warptile-b", 50000}, {"slow", 20000}};
  const auto library = [](const std::string& k) { return k == "cublas"; };
  const auto any = [](const std::string&) { return true; };
  const double f8192 = 2.0 * 8192 * 8192 * 8192;  // 1.1 TFLOP: 21.5 ms on cuBLAS, 0.15 s to load it
  CHECK(backend::whole_job_kernel(c, f8192, 0.15, library, any) == "warptile-a");
  CHECK(backend::whole_job_kernel(c, f8192, 0.0, library, any) == "cublas");  // already loaded: the tune's choice
  // A kernel that cannot run the problem is passed over, and the next soonest taken.
  CHECK(backend::whole_job_kernel(c, f8192, 0.15, library, [](const std::string& k) { return k != "warptile-a"; }) ==
        "warptile-b");
  // Only cuBLAS allowed: cuBLAS, whatever its load.
  CHECK(backend::whole_job_kernel(c, f8192, 0.15, library, [](const std::string& k) { return k == "cublas"; }) ==
        "cublas");

  // Where cuBLAS is clearly faster, a job long enough pays its load back.
  backend::TunedChoice d;
  d.dtype = DType::f64;
  d.kernel = "cublas";
  d.gflops = 61768;
  d.candidates = {{"cublas", 61768}, {"dmma", 57348}};
  const double big = 2.0 * 65536.0 * 65536.0 * 65536.0;  // 5.6e14 flop: cuBLAS 9.1 s, dmma 9.8 s
  CHECK(backend::whole_job_kernel(d, big, 0.15, library, any) == "cublas");
  CHECK(backend::whole_job_kernel(d, 2.0 * 4096.0 * 4096.0 * 4096.0, 0.15, library, any) == "dmma");
  // An own winner stays; a choice without candidates keeps its winner.
  backend::TunedChoice own = d;
  own.kernel = "dmma";
  CHECK(backend::whole_job_kernel(own, big, 0.15, library, any) == "dmma");
  backend::TunedChoice bare = d;
  bare.candidates.clear();
  CHECK(backend::whole_job_kernel(bare, 1.0, 0.15, library, any) == "cublas");
}

TEST_CASE("tune files: candidates and library load times are read; bad ones refused", "[tuning]") {
  const std::string path = "tessera-test-tune-libraries.json";
  {
    std::ofstream f(path);
    f << R"({"format": "tessera-tune-1", "device": "Test GPU", "libraries": {"cublas": {"load_seconds": 0.21}},
             "choices": [{"dtype": "f32", "m": 64, "n": 64, "k": 64, "kernel": "cublas", "gflops": 2,
                          "candidates": {"cublas": 2, "own": 1.5}}]})";
  }
  const backend::TuneTable t = backend::read_tune_file(path);
  REQUIRE(t.choices.size() == 1);
  CHECK(t.choices[0].candidates.at("own") == 1.5);
  CHECK(t.load_seconds.at("cublas") == 0.21);
  REQUIRE(backend::tuned_choice(t, DType::f32, 70, 70, 70) == &t.choices[0]);
  CHECK(backend::tuned_choice(t, DType::f64, 70, 70, 70) == nullptr);
  {
    std::ofstream f(path);
    f << R"({"format": "tessera-tune-1", "device": "Test GPU", "libraries": {"cublas": {"load_seconds": -1}},
             "choices": []})";
  }
  CHECK_THROWS_AS(backend::read_tune_file(path), InputError);
  std::remove(path.c_str());
}

TEST_CASE("tune files: a binary in its build folder reads the repository's configs/tuned from any directory",
          "[tuning]") {
  // This test runs from the build folder (not installed): the repository's file is a candidate by
  // its absolute path, so a run from a user's data folder finds it as a run from the repository does;
  // the configured install prefix stays the last resort.
  const std::string repo_file = std::string(tessera::kSourceDir) + "/configs/tuned/tuned-NVIDIA_H200.json";
  const auto paths = tessera::backend::tune_file_candidates("NVIDIA H200");
  const auto at = std::find(paths.begin(), paths.end(), repo_file);
  REQUIRE(at != paths.end());
  CHECK(at + 1 != paths.end());
}
