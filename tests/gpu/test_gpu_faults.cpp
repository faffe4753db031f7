// GPU faults: running out of device memory gives one message with the bytes asked for, the bytes
// free and what to change; the device stays usable afterwards.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

#include "backend/cuda_backend.hpp"
#include "core/error.hpp"
#include "kernels/cuda_resources.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("out of GPU memory names the bytes needed and free and what to do", "[gpu][fault]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const std::size_t petabyte = std::size_t{1} << 50;
  try {
    tessera::kernels::DeviceBuffer huge(petabyte, "C block");
    FAIL("a 1 PiB allocation succeeded");
  } catch (const tessera::DeviceError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("out of GPU memory"));
    CHECK_THAT(what, ContainsSubstring("C block"));
    CHECK_THAT(what, ContainsSubstring("free of"));
    CHECK_THAT(what, ContainsSubstring("use more ranks"));
  }
  // Not sticky: the next allocation works.
  tessera::kernels::DeviceBuffer small(1 << 20, "after");
  CHECK(small.get() != nullptr);
}
