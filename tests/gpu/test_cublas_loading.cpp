// cuBLAS is opened on first use (kernels/cublas_library.hpp), not linked: loading it costs every
// process ~0.3 s. Needs the library, not a GPU: runs everywhere CUDA is built.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "kernels/cublas_library.hpp"

TEST_CASE("cuBLAS is found and bound when first asked for", "[cublas]") {
  const auto& api = tessera::kernels::cublas_api();
  CHECK(tessera::kernels::cublas_loaded());
  REQUIRE(api.status_name != nullptr);
  CHECK(std::string(api.status_name(CUBLAS_STATUS_SUCCESS)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(std::string(api.status_name(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&tessera::kernels::cublas_api() == &api);  // loaded once
}
