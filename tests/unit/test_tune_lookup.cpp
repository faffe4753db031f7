// Where `--kernel auto` looks for a tune file (backend/tuning.hpp): after the working directory's
// configs/tuned/, the installed <prefix>/share/tessera/tuned/ of the running binary, then of the
// configured install prefix, so an installed tessera finds the tune files `cmake --install` put
// there without a source tree.
#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/tuning.hpp"
#include "core/error.hpp"
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

namespace {

// XDG_CACHE_HOME (and TESSERA_TUNE_FILE, unset) for one test: the user cache is a fresh folder.
class CacheHome {
 public:
  CacheHome() {
    for (const char* name : {"XDG_CACHE_HOME", "TESSERA_TUNE_FILE"})
      if (const char* v = std::getenv(name)) was_.emplace_back(name, v);
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-tune-lookup-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    std::filesystem::create_directories(dir_ / "tessera");
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    ::unsetenv("TESSERA_TUNE_FILE");
  }
  CacheHome(const CacheHome&) = delete;
  CacheHome& operator=(const CacheHome&) = delete;
  ~CacheHome() {
    ::unsetenv("XDG_CACHE_HOME");
    for (const auto& [name, value] : was_) ::setenv(name.c_str(), value.c_str(), 1);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / "tessera" / name).string(); }
  std::string put(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = dir_ / "tessera" / name;
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::string, std::string>> was_;
};

std::string tune_file(const std::string& device, const std::string& architecture, const std::string& kernel) {
  std::string arch = architecture.empty() ? "" : "\"architecture\": \"" + architecture + "\", ";
  return "{\"format\": \"tessera-tune-1\", \"device\": \"" + device + "\", " + arch +
         "\"choices\": [{\"dtype\": \"f32\", \"m\": 8192, \"n\": 8192, \"k\": 8192, \"kernel\": \"" + kernel + "\"}]}";
}

}  // namespace

TEST_CASE("tune files: a GPU without its own reads a sibling's of the same architecture", "[tune]") {
  using tessera::backend::load_tune_table;
  const CacheHome cache;
  const std::string broken = cache.put("tuned-Aaa_Broken.json", "{ not json");
  cache.put("tuned-Old_GPU.json", tune_file("Old GPU", "", "regtile"));  // no architecture: never a sibling
  const std::string hopper =
      cache.put("tuned-Other_Hopper.json", tune_file("Other Hopper", "sm_90", "warptile-128x128"));
  const std::string ampere = cache.put("tuned-Other_Ampere.json", tune_file("Other Ampere", "sm_80", "vectorized"));
  cache.put("notes.json", tune_file("Not A Tune File Name", "sm_90", "naive"));

  std::vector<std::string> skipped;
  const auto t = load_tune_table("Fake Hopper [0000:01:00.0]", "sm_90", &skipped);
  CHECK(t.path == hopper);
  CHECK(t.sibling);
  CHECK(t.device == "Other Hopper");
  CHECK(t.architecture == "sm_90");
  REQUIRE(t.choices.size() == 1);
  CHECK(t.choices[0].kernel == "warptile-128x128");
  REQUIRE(skipped.size() == 1);  // the unparsable sibling is named, not fatal
  CHECK(skipped[0].find(broken) != std::string::npos);

  CHECK(load_tune_table("Fake Ampere", "sm_80").path == ampere);
  CHECK(load_tune_table("Fake Hopper", "").path.empty());       // no architecture asked: the built-in choice
  CHECK(load_tune_table("Fake Turing", "sm_75").path.empty());  // none of that architecture anywhere

  // A file of this GPU wins over every sibling, whatever architecture it records, and is never a sibling.
  const std::string own = cache.put("tuned-Fake_Hopper.json", tune_file("Fake Hopper", "", "regtile"));
  const auto mine = load_tune_table("Fake Hopper", "sm_90");
  CHECK(mine.path == own);
  CHECK_FALSE(mine.sibling);
  // ... and one that cannot be parsed is still an error (it was written for this GPU).
  cache.put("tuned-Fake_Hopper.json", "[]");
  CHECK_THROWS_AS(load_tune_table("Fake Hopper", "sm_90"), tessera::InputError);
}

TEST_CASE("tune files: the shipped H200 file records its architecture, so an H100 reads it", "[tune]") {
  const CacheHome cache;  // an empty user cache
  const auto t = tessera::backend::load_tune_table("NVIDIA H100 80GB HBM3", "sm_90");
  REQUIRE_FALSE(t.path.empty());
  CHECK(t.sibling);
  CHECK(t.device == "NVIDIA H200");
  CHECK(t.architecture == "sm_90");
  CHECK(t.load_seconds.count("cublas") == 1);
}

TEST_CASE("tune files: siblings by name within a folder; FIFOs, folders and $TESSERA_TUNE_FILE's name", "[tune]") {
  using tessera::backend::load_tune_table;
  const CacheHome cache;
  // Written B first: the directory's own order must not decide.
  cache.put("tuned-B_Hopper.json", tune_file("B Hopper", "sm_90", "regtile"));
  const std::string a = cache.put("tuned-A_Hopper.json", tune_file("A Hopper", "sm_90", "vectorized"));
  // Not regular files under a tune file's name: skipped, never opened (a FIFO's open would wait).
  REQUIRE(::mkfifo(cache.path("tuned-0_Fifo.json").c_str(), 0600) == 0);
  std::filesystem::create_directories(cache.path("tuned-0_Folder.json"));
  std::vector<std::string> skipped;
  CHECK(load_tune_table("Fake Hopper", "sm_90", &skipped).path == a);
  CHECK(skipped.empty());
  // Read directly (a name checked, then swapped for a FIFO): refused at once, not waited on.
  CHECK_THROWS_AS(tessera::backend::read_tune_file(cache.path("tuned-0_Fifo.json")), tessera::InputError);
  // Nor is a file far larger than any tune file read whole.
  const std::string huge = cache.put("tuned-0_Huge.json", "");
  std::filesystem::resize_file(huge, (std::uintmax_t{16} << 20) + 1);
  CHECK_THROWS_AS(tessera::backend::read_tune_file(huge), tessera::InputError);

  // $TESSERA_TUNE_FILE naming the cache's own path for this GPU, absent: the cache folder is still
  // searched for siblings (only the variable's entry is a file and not a folder).
  ::setenv("TESSERA_TUNE_FILE", cache.path("tuned-Fake_Hopper.json").c_str(), 1);
  const auto t = load_tune_table("Fake Hopper", "sm_90");
  ::unsetenv("TESSERA_TUNE_FILE");
  CHECK(t.path == a);
  CHECK(t.sibling);
}
