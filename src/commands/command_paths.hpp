#pragma once
// Every path a command other than `run` touches (run: job/job_paths.hpp), put to io::PathGuard
// before anything is read or computed: `verify`, `generate --out`, `bench --json/--csv`,
// `tune --out`. Rank 0 calls these; each throws InputError at the first conflict.
#include <string>

#include "commands/bench.hpp"
#include "commands/generate.hpp"
#include "commands/verify.hpp"
#include "io/path_rule.hpp"

namespace tessera::commands {

// verify writes nothing; A, B and C are located (and refused where HDF5 would fill them).
io::GuardedPaths guard_verify_paths(const VerifyOptions& o);
void guard_generate_paths(const GenerateOptions& o);
void guard_bench_paths(const BenchOptions& o);
void guard_tune_paths(const std::string& out, const std::string& config);

}  // namespace tessera::commands
