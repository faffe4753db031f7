#pragma once
// Every path a command touches, put to io::PathGuard (the rule is written there) before anything
// is read or computed: `run` and `--dry-run`, `verify`, `generate --out`, `bench --json/--csv`,
// `tune --out`. Rank 0 calls these; each throws InputError at the first conflict.
#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/path_guard.hpp"
#include "run/bench.hpp"
#include "run/generate.hpp"
#include "run/pipeline.hpp"
#include "run/tune.hpp"
#include "run/verify.hpp"

namespace tessera::run {

struct GuardedPaths {
  io::PathGuard guard;             // what was checked: is_read() protects inputs from clean-ups
  std::vector<std::string> notes;  // inputs read partly as a declared fill value (io::locate_data)
};

// run and --dry-run: A and B with every file their data lives in (io::locate_data, which also
// refuses inputs HDF5 would silently fill), the output C (not for a dry run), the report, the
// config.
GuardedPaths guard_run_paths(const RunOptions& o);
// verify writes nothing; A, B and C are located (and refused where HDF5 would fill them).
GuardedPaths guard_verify_paths(const VerifyOptions& o);
void guard_generate_paths(const GenerateOptions& o);
void guard_bench_paths(const BenchOptions& o);
void guard_tune_paths(const std::string& out, const std::string& config);

// The report's temporary file, created now with room for the report of `nranks` ranks, so a
// report that cannot be written (no space, no permission) is refused before the job runs;
// publish_report (io::write_file_replacing) fills it and renames it into place. nullptr for no
// report, or one written to a terminal or pipe.
std::unique_ptr<io::FileReservation> reserve_report(const std::string& path, int nranks);

// Whether an existing file is one tessera may replace as a --report: a run or dry-run report
// (JSON), or empty.
bool is_tessera_report(const std::string& path);

}  // namespace tessera::run
