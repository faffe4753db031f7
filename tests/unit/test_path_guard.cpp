// io::PathGuard (the one rule for the paths a command touches) and io::write_file_replacing, in
// process: no MPI, no HDF5. The same cases through the CLI, with every rank and every file
// checked, are tests/scripts/safety.py.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/cleanup.hpp"
#include "io/path_guard.hpp"

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tessera::InputError;
using tessera::io::PathGuard;

namespace {

struct TempDir : tessera::test::TempDir {
  TempDir() : tessera::test::TempDir("tessera-guard-test") {}
};

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
std::string get(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}
bool any_report(const std::string&) { return true; }

std::string refusal(const PathGuard& guard) {
  try {
    guard.check();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("path guard: a written file may not be a file that is read, by any name", "[guard]") {
  TempDir dir;
  const std::string a = dir.file("a.h5");
  put(a, "input");
  fs::create_hard_link(a, dir.file("hard.h5"));
  for (const std::string& name : {a, dir.file("./a.h5"), dir.file("hard.h5")}) {
    INFO(name);
    PathGuard report;
    report.read(a, "A 'a.h5:/A'");
    report.written(name, "--report", "a tessera report", any_report);
    CHECK_THAT(refusal(report), ContainsSubstring("is also an input file: A 'a.h5:/A'"));
    PathGuard output;
    output.read(a, "A 'a.h5:/A'");
    output.output(name, "--c");
    CHECK_THAT(refusal(output), ContainsSubstring("is also an input file"));
  }
  CHECK(get(a) == "input");
}

TEST_CASE("path guard: the report is not the output, nor its temporary, before either exists", "[guard]") {
  TempDir dir;
  const std::string c = dir.file("c.h5");
  PathGuard same;
  same.output(c, "--c");
  same.written(dir.file("./c.h5"), "--report", "a tessera report", any_report);
  CHECK_THAT(refusal(same), ContainsSubstring("is the output file"));
  PathGuard temp;
  temp.output(c, "--c");
  temp.written(tessera::io::temporary_name(c), "--report", "a tessera report", any_report);
  CHECK_THAT(refusal(temp), ContainsSubstring("temporary name of the output file"));
  CHECK(dir.entries() == 0);
}

TEST_CASE("path guard: symbolic links, directories and devices as outputs", "[guard]") {
  TempDir dir;
  put(dir.file("target.h5"), "data");
  fs::create_symlink("target.h5", dir.file("link.h5"));
  fs::create_symlink("nowhere.h5", dir.file("dangling.h5"));
  fs::create_directory(dir.file("sub"));
  const auto output = [&](const std::string& file) {
    PathGuard g;
    g.output(file, "--c");
    return refusal(g);
  };
  CHECK_THAT(output(dir.file("link.h5")), ContainsSubstring("is a symbolic link to 'target.h5'"));
  CHECK_THAT(output(dir.file("dangling.h5")), ContainsSubstring("which does not exist"));
  CHECK_THAT(output(dir.file("sub")), ContainsSubstring("is a directory"));
  CHECK_THAT(output("/dev/null"), ContainsSubstring("not a regular file"));
  // The result goes into an existing file as a new dataset (the writer checks the dataset and
  // --overwrite), for run's C and generate's matrix alike: the file is never replaced whole.
  CHECK(output(dir.file("target.h5")) == "(accepted)");
  CHECK_THAT(output(dir.file("none/c.h5")), ContainsSubstring("output directory"));
  CHECK(get(dir.file("target.h5")) == "data");
}

TEST_CASE("path guard: a report replaces only a report", "[guard]") {
  TempDir dir;
  put(dir.file("notes.json"), "{\"mine\": 1}");
  put(dir.file("empty.json"), "");
  const auto report = [&](const std::string& file) {
    PathGuard g;
    g.written(file, "--report", "a tessera report",
              [](const std::string& p) { return fs::file_size(p) == 0; });  // stands for is_tessera_report
    return refusal(g);
  };
  CHECK_THAT(report(dir.file("notes.json")), ContainsSubstring("exists and is not a tessera report"));
  CHECK(report(dir.file("empty.json")) == "(accepted)");
  CHECK(report(dir.file("new.json")) == "(accepted)");
  CHECK(report("/dev/null") == "(accepted)");  // a stream: written as it is
  CHECK_THAT(report(dir.file("missing/r.json")), ContainsSubstring("report directory"));
  put(dir.file("ro.json"), "");
  fs::permissions(dir.file("ro.json"), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  CHECK_THAT(report(dir.file("ro.json")), ContainsSubstring("read-only"));
  PathGuard twice;
  twice.written(dir.file("out"), "--json", "a tessera bench JSON file", any_report);
  twice.written(dir.file("out"), "--csv", "a tessera bench CSV file", any_report);
  CHECK_THAT(refusal(twice), ContainsSubstring("--csv '" + dir.file("out") + "' is the same file as --json"));
}

TEST_CASE("write_file_replacing writes whole files or none", "[guard]") {
  TempDir dir;
  const std::string r = dir.file("r.json");
  tessera::io::write_file_replacing(r, "first\n");
  CHECK(get(r) == "first\n");
  {
    const tessera::io::FileReservation reserved(r, 1 << 16, "--report");
    CHECK(fs::exists(tessera::io::temporary_name(r)));
    CHECK(get(r) == "first\n");  // the old file stays until the new one is complete
    tessera::io::write_file_replacing(r, "second\n");
  }
  CHECK(get(r) == "second\n");
  CHECK(dir.entries() == 1);
  { const tessera::io::FileReservation unused(r, 4096, "--report"); }
  CHECK(dir.entries() == 1);  // a reservation never used leaves nothing
  CHECK_THROWS_AS(tessera::io::write_file_replacing(dir.file("missing/r.json"), "x"), tessera::IoError);
  CHECK(dir.entries() == 1);
}
