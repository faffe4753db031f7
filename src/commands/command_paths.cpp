#include "commands/command_paths.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "io/hdf5_io.hpp"

namespace tessera::commands {

io::GuardedPaths guard_verify_paths(const VerifyOptions& o) {
  io::GuardedPaths g;
  io::guard_input(g, io::DatasetRef::parse(o.a), "A");
  io::guard_input(g, io::DatasetRef::parse(o.b), "B");
  io::guard_input(g, io::DatasetRef::parse(o.c), "C");
  io::guard_config(g.guard, o.config);
  g.guard.check();
  return g;
}

void guard_generate_paths(const GenerateOptions& o) {
  io::GuardedPaths g;
  io::guard_config(g.guard, o.config);
  io::recover_before_use(g, io::DatasetRef::parse(o.out).file);
  for (const auto& note : g.notes) std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
  g.guard.output(io::DatasetRef::parse(o.out).file, "--out");
  g.guard.check();
}

void guard_bench_paths(const BenchOptions& o) {
  io::PathGuard guard;
  io::guard_config(guard, o.config);
  if (!o.json_path.empty())
    guard.written(o.json_path, "--json", "a tessera bench JSON file", [](const std::string& p) {
      return io::json_file_of(p, [](const nlohmann::json& j) {
        return j.contains("results") && j.contains("naive_kernel") && j.contains("tessera_version");
      });
    });
  if (!o.csv_path.empty())
    guard.written(o.csv_path, "--csv", "a tessera bench CSV file", [](const std::string& p) {
      std::string text;
      return io::read_small_file(p, text) && (text.empty() || text.rfind("m,n,k,dtype,kernel,", 0) == 0);
    });
  guard.check();
}

void guard_tune_paths(const std::string& out, const std::string& config) {
  io::PathGuard guard;
  io::guard_config(guard, config);
  guard.written(out, "--out", "a tessera tune file", [](const std::string& p) {
    return io::json_file_of(
        p, [](const nlohmann::json& j) { return j.value("format", std::string()).rfind("tessera-tune", 0) == 0; });
  });
  guard.check();
}

}  // namespace tessera::commands
