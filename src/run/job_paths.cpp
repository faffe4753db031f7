#include "run/job_paths.hpp"

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "io/data_sources.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::run {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// The file's text when it is small enough to be one of tessera's own files (a report of 100,000
// ranks is ~150 MB); nullopt-like empty flag otherwise.
bool read_small(const std::string& path, std::string& text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (std::int64_t{1} << 30)) return false;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  text = all.str();
  return static_cast<bool>(in);
}

// An empty file holds nothing to lose; otherwise a JSON object that `match` recognizes.
template <class Match>
bool json_file_of(const std::string& path, Match match) {
  std::string text;
  if (!read_small(path, text)) return false;
  if (text.empty()) return true;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos || text[text.find_first_not_of(" \t\r\n")] != '{')
    return false;  // not JSON at all (e.g. HDF5): no need to parse
  const auto j = nlohmann::json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object() && match(j);
}

void add_config(io::PathGuard& guard, const std::string& config) {
  if (!config.empty()) guard.read(config, "the config file " + in_quotes(config));
}

// `ref` and every file its data lives in, as files the command reads.
void add_input(GuardedPaths& g, const std::string& text, const std::string& role) {
  const auto ref = io::DatasetRef::parse(text);
  io::DataSources sources = io::locate_data(ref, role);
  g.guard.read(ref.file, role + " " + in_quotes(ref.str()));
  for (const auto& file : sources.files)
    if (file != ref.file)
      g.guard.read(file, role + " " + in_quotes(ref.str()) + " reads its data from " + in_quotes(file));
  for (auto& note : sources.notes) g.notes.push_back(std::move(note));
}

}  // namespace

bool is_tessera_report(const std::string& path) {
  return json_file_of(path, [](const nlohmann::json& j) {
    const std::string schema = j.value("schema", std::string());
    const bool run_report = schema.rfind("tessera.", 0) == 0;
    const bool dry_run = j.contains("predicted_seconds") && j.contains("rank0") && j.contains("algorithm");
    return run_report || dry_run;
  });
}

std::unique_ptr<io::FileReservation> reserve_report(const std::string& path, int nranks) {
  struct stat st {};
  if (path.empty() || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) return nullptr;
  // A report holds ~1.3 KiB per rank and ~2 KiB besides (docs/report.md); room for more.
  return std::make_unique<io::FileReservation>(path, 8192 + 2048 * static_cast<std::size_t>(nranks), "--report");
}

GuardedPaths guard_run_paths(const RunOptions& o) {
  GuardedPaths g;
  if (!o.a.empty()) add_input(g, o.a, "A");
  if (!o.b.empty()) add_input(g, o.b, "B");
  add_config(g.guard, o.config);
  if (!o.dry_run) g.guard.output(io::DatasetRef::parse(o.c).file, "--c", o.overwrite);
  // (A report to stdout, "--report -" of issue #17, is a stream like /dev/stdout: it would skip
  // this check and the reservation, as PathGuard and reserve_report do for pipes.)
  if (!o.report.empty()) g.guard.written(o.report, "--report", "a tessera report", is_tessera_report);
  g.guard.check();
  return g;
}

GuardedPaths guard_verify_paths(const VerifyOptions& o) {
  GuardedPaths g;
  add_input(g, o.a, "A");
  add_input(g, o.b, "B");
  add_input(g, o.c, "C");
  add_config(g.guard, o.config);
  g.guard.check();
  return g;
}

void guard_generate_paths(const GenerateOptions& o) {
  io::PathGuard guard;
  add_config(guard, o.config);
  guard.output(io::DatasetRef::parse(o.out).file, "--out", o.overwrite);
  guard.check();
}

void guard_bench_paths(const BenchOptions& o) {
  io::PathGuard guard;
  add_config(guard, o.config);
  if (!o.json_path.empty())
    guard.written(o.json_path, "--json", "a tessera bench JSON file", [](const std::string& p) {
      return json_file_of(p, [](const nlohmann::json& j) {
        return j.contains("results") && j.contains("naive_kernel") && j.contains("tessera_version");
      });
    });
  if (!o.csv_path.empty())
    guard.written(o.csv_path, "--csv", "a tessera bench CSV file", [](const std::string& p) {
      std::string text;
      return read_small(p, text) && (text.empty() || text.rfind("m,n,k,dtype,kernel,", 0) == 0);
    });
  guard.check();
}

void guard_tune_paths(const std::string& out, const std::string& config) {
  io::PathGuard guard;
  add_config(guard, config);
  guard.written(out, "--out", "a tessera tune file", [](const std::string& p) {
    return json_file_of(
        p, [](const nlohmann::json& j) { return j.value("format", std::string()).rfind("tessera-tune", 0) == 0; });
  });
  guard.check();
}

}  // namespace tessera::run
