// The tune file and its lookup (backend/tuning.hpp): read, matched to the nearest tuned size,
// refused when it is not a tune file. Host only.
#include <catch2/catch_test_macros.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "backend/tuning.hpp"
#include "core/error.hpp"

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
