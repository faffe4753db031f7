#pragma once
// Every path `run` touches, put to io::PathGuard (the rule is written there) before anything is
// read or computed (the other commands: commands/command_paths.hpp). Rank 0 calls these; each
// throws InputError at the first conflict.
#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/path_rule.hpp"
#include "job/job_options.hpp"
#include "job/run_job.hpp"

namespace tessera::job {

using io::GuardedPaths;

// Whose paths guard_run_paths checks.
enum class Guarding {
  run,          // a run of the launch's only product: every path
  product,      // one product of many: the report and the manifest are the launch's
  dry_run,      // --dry-run: nothing is written, so no output is checked or recovered
};
// run and --dry-run: A and B with every file their data lives in (io::locate_data, which also
// refuses inputs HDF5 would silently fill), the output C (not for a dry run), the report, the
// config. One product of many: the report and the manifest were guarded once by
// guard_launch_paths (checking whether an existing report is tessera's parses it: a report of
// hundreds of products, parsed again at every product, cost each product 30 ms).
GuardedPaths guard_run_paths(const JobOptions& o, Guarding use = Guarding::run);
// Many products (job/launch.hpp): every product's A, B and C, the manifest, the config and the
// launch's report, before the first product runs (each product's plan checks its own again).
GuardedPaths guard_launch_paths(const RunOptions& o, const std::vector<Product>& products);

// The report's temporary file, created now with room for the report of `nranks` ranks, so a
// report that cannot be written (no space, no permission) is refused before the job runs;
// publish_report (io::write_file_replacing) fills it and renames it into place. nullptr for no
// report, or one written to a terminal or pipe.
std::unique_ptr<io::FileReservation> reserve_report(const std::string& path, int nranks);

// Whether an existing file is one tessera may replace as a --report: a run or dry-run report
// (JSON), or empty.
bool is_tessera_report(const std::string& path);

}  // namespace tessera::job
