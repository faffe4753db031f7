// Where `--kernel auto` looks for a tune file (backend/tuning.hpp): after the working directory's
// configs/tuned/, the installed <prefix>/share/tessera/tuned/ of the running binary, then of the
// configured install prefix, so an installed tessera finds the tune files `cmake --install` put
// there without a source tree.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/tuning.hpp"
#include "core/version.hpp"

namespace {

std::ptrdiff_t index_of(const std::vector<std::string>& paths, const std::string& path) {
  const auto it = std::find(paths.begin(), paths.end(), path);
  return it == paths.end() ? -1 : it - paths.begin();
}

}  // namespace

TEST_CASE("tune files: the installed share/tessera/tuned after the working directory's configs/tuned", "[tune]") {
  const std::vector<std::string> paths = tessera::backend::tune_file_candidates("NVIDIA H200 [0000:1b:00.0]");
  const std::string file = "tuned-NVIDIA_H200.json";
  const std::ptrdiff_t source_tree = index_of(paths, "configs/tuned/" + file);
  REQUIRE(source_tree >= 0);

  // This test program's prefix (<build>/tests/../share/...): how an installed bin/tessera finds its own.
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::string beside_binary =
      (exe.parent_path().parent_path() / "share" / "tessera" / "tuned" / file).lexically_normal().string();
  const std::ptrdiff_t installed = index_of(paths, beside_binary);
  CHECK(installed > source_tree);

  const std::string configured =
      (std::filesystem::path(tessera::kInstallDataDir) / "tuned" / file).lexically_normal().string();
  const std::ptrdiff_t prefix = index_of(paths, configured);
  CHECK(prefix > source_tree);
  CHECK(prefix == static_cast<std::ptrdiff_t>(paths.size()) - 1);
}
