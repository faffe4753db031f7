#pragma once
// Provenance: what a report needs so that a measurement can be reproduced and compared (issue
// #17): the command line and the options given, tessera's version and git id, the libraries it
// ran with, the Slurm job, the hosts and the GPUs. The command line layer collects what needs MPI,
// HDF5, BLAS or CUDA (commands/provenance.hpp) and hands it here once per process; every JSON
// tessera writes takes its `provenance` block from here. Knows nothing of those libraries.
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::report {

// The schema names of tessera's JSON documents ("<name>/<major version>"), and the files under
// docs/schema/ that describe them.
inline constexpr const char* kReportSchema = "tessera.report/1";
inline constexpr const char* kDryRunSchema = "tessera.dry-run/1";
inline constexpr const char* kBenchSchema = "tessera.bench/1";
inline constexpr const char* kInfoSchema = "tessera.info/1";
inline constexpr const char* kTuneSchema = "tessera.tune/1";

// Sets this process's provenance (an object: command_line, options, libraries, slurm, ranks ...).
// Not thread-safe: set once, before any report is made.
void set_provenance(nlohmann::json block);

// The provenance block: what set_provenance gave (nothing when tessera runs as a library), with
// tessera's version, git id and build type, the Slurm job id (from the environment) and this host
// always filled in.
nlohmann::json provenance();

}  // namespace tessera::report
