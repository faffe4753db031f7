#include "job/job_paths.hpp"

#include <sys/stat.h>

#include <set>

#include <nlohmann/json.hpp>

#include "io/hdf5_io.hpp"

namespace tessera::job {

bool is_tessera_report(const std::string& path) {
  return io::json_file_of(path, [](const nlohmann::json& j) {
    const std::string schema = j.value("schema", std::string());
    const bool run_report = schema.rfind("tessera.", 0) == 0;
    const bool dry_run = j.contains("predicted_seconds") && j.contains("rank0") && j.contains("algorithm");
    return run_report || dry_run;
  });
}

std::unique_ptr<io::FileReservation> reserve_report(const std::string& path, int nranks) {
  struct stat st {};
  if (path.empty() || path == "-" || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) return nullptr;
  // A report holds ~1.3 KiB per rank and ~2 KiB besides (docs/report.md); room for more.
  return std::make_unique<io::FileReservation>(path, 8192 + 2048 * static_cast<std::size_t>(nranks), "--report");
}

GuardedPaths guard_run_paths(const JobOptions& o, Guarding use) {
  GuardedPaths g;
  const bool writes = use != Guarding::dry_run, launch_guarded = use == Guarding::product;
  // The output first: a journal of the file the run writes is applied (also where A or B live in
  // that file); one beside a file the run only reads refuses the run.
  if (writes) io::recover_before_use(g, o.c.file);
  if (o.has_a()) io::guard_input(g, o.a.ref, "A");
  if (o.has_b()) io::guard_input(g, o.b.ref, "B");
  io::guard_config(g.guard, o.config);
  if (!o.manifest.empty() && !launch_guarded) g.guard.read(o.manifest, "the manifest '" + o.manifest + "'");
  if (writes) g.guard.output(o.c.file, "--c");
  // (A report to stdout, "--report -", is a stream like /dev/stdout: PathGuard and reserve_report
  // skip it as they do pipes.)
  if (!o.report.empty() && !launch_guarded)
    g.guard.written(o.report, "--report", "a tessera report", is_tessera_report);
  g.guard.check();
  return g;
}

GuardedPaths guard_launch_paths(const RunOptions& o, const std::vector<Product>& products) {
  GuardedPaths g;
  for (const Product& p : products) {
    io::guard_input(g, io::DatasetRef::parse(p.a), "A");
    io::guard_input(g, io::DatasetRef::parse(p.b), "B");
  }
  io::guard_config(g.guard, o.config);
  if (!o.manifest.empty()) g.guard.read(o.manifest, "the manifest '" + o.manifest + "'");
  std::set<std::string> outputs;
  for (const Product& p : products) outputs.insert(io::DatasetRef::parse(p.c).file);
  for (const auto& file : outputs) g.guard.output(file, "--c");
  if (!o.report.empty()) g.guard.written(o.report, "--report", "a tessera report", is_tessera_report);
  g.guard.check();
  return g;
}

}  // namespace tessera::job
