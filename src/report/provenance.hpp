#pragma once
// Provenance: what a report needs so that a measurement can be reproduced and compared (issues
// #17, #31): the command line and the options given (typed), tessera's version and git id, the
// libraries it ran with, the working directory, the TESSERA_* and launcher variables in force,
// the Slurm job, the hosts, the GPUs, and the identity of each input file (size, modification
// time, the dataset's shape, type and storage). The command line layer collects what needs MPI,
// HDF5, BLAS or CUDA (commands/provenance.hpp) and hands it here once per process; the job
// describes its inputs (InputRecord); every JSON tessera writes, and C's `provenance` attribute,
// take their `provenance` block from here. Knows nothing of those libraries.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::report {

// The schema names of tessera's JSON documents ("<name>/<major version>"), and the files under
// docs/schema/ that describe them.
inline constexpr const char* kReportSchema = "tessera.report/1";
inline constexpr const char* kDryRunSchema = "tessera.dry-run/1";
inline constexpr const char* kBenchSchema = "tessera.bench/1";
inline constexpr const char* kInfoSchema = "tessera.info/1";
inline constexpr const char* kTuneSchema = "tessera.tune/1";

// One input dataset as the job found it before reading it: enough to tell later whether the file
// is still the one that was multiplied.
struct InputRecord {
  std::string role;       // "a", "b", or "c" (the C_old that --beta reads)
  std::string reference;  // FILE:/PATH with the file absolute
  std::string file;       // the file, absolute
  std::int64_t size_bytes = 0;
  std::int64_t modified_seconds = 0;  // the file's modification time, since the Unix epoch, UTC
  std::int64_t modified_nanoseconds = 0;
  std::int64_t rows = 0, cols = 0;   // the dataset as stored (before any --transpose-a/-b)
  std::string stored_type;           // "float64", "float32", "int32", ...
  std::string layout;                // "contiguous", "chunked" or "compact"
  std::vector<std::int64_t> chunk;   // the chunk shape when chunked
  std::vector<std::string> filters;  // e.g. {"deflate", "shuffle"}
};
// {role, reference, file, size_bytes, modified ("2026-12-01T18:09:53.123456789Z"), shape,
//  dtype, layout, chunk (null unless chunked), filters}
nlohmann::json to_json(const InputRecord& r);
// "2026-12-01T18:09:53.123456789Z"
std::string utc_timestamp_ns(std::int64_t seconds, std::int64_t nanoseconds);

// Sets this process's provenance (an object: command_line, options, libraries, slurm, ranks ...).
// Not thread-safe: set once, before any report is made.
void set_provenance(nlohmann::json block);

// The options of the command as it understood them, typed (name without `--` -> number, bool,
// string, list): the provenance's `options` then hold these values for the options that were
// given (the others keep the text they were given as). The job and each command set it from
// their own typed request, once, before any report is made.
void set_typed_options(nlohmann::json typed);

// The provenance block: what set_provenance gave (nothing when tessera runs as a library), with
// tessera's version, git id and build type, the working directory, the variables in force
// (environment_in_force), the Slurm job id and this host always filled in.
nlohmann::json provenance();

// The variables of this process's environment that shape a run, name -> value: TESSERA_*, the
// launcher's (Open MPI's OMPI_COMM_WORLD_*, PMIx's PMIX_RANK, MPICH's PMI_*, Slurm's job, step
// and task variables), the MPI, UCX and NCCL tuning ones, CUDA_VISIBLE_DEVICES, the thread
// counts, HDF5's plugin variables. Not the rest of the environment; values cut at 256 characters.
nlohmann::json environment_in_force();

// Whether `name` is one environment_in_force() reports.
bool reported_variable(const std::string& name);

}  // namespace tessera::report
