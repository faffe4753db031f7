#pragma once
// The options of one product's job as the job reads them, parsed once at the edge (job_options):
// the inputs and the output as references to datasets, every name and size as a value
// (algorithms::Asked). Job and the functions of its steps take this, never RunOptions' text, so
// no step parses a word of the user's again, and an operand is a thing to read, not a string (the
// ground for inputs that are not files). RunOptions stays with what only the edge reads: the
// command line and config file, --repeat, the list of products, the dry run's own options.
#include <optional>
#include <string>

#include "algorithms/choice.hpp"
#include "io/hdf5_io.hpp"
#include "io/operand.hpp"
#include "job/run_options.hpp"

namespace tessera::job {

struct JobOptions {
  algorithms::Asked asked;  // backend, kernel, dtype, algorithm, grid, sizes: typed (asked_of)
  io::Operand a, b;         // op(A), op(B): the datasets (and windows) and whether each is transposed
  io::DatasetRef c;         // where C goes; C_old, read when beta != 0
  double alpha = 1, beta = 0;
  double alpha_imag = 0, beta_imag = 0;           // complex products in memory (RunOptions)
  bool conjugate_a = false, conjugate_b = false;  // op(X) = X^H: a transposed and conjugated
  std::string c_dtype = "auto";                   // --c-dtype (job/plan.hpp's stored_for)
  bool overwrite = false;
  bool quiet = false;              // no table on stdout
  bool allow_nonfinite = false;    // multiply NaN / Inf inputs instead of refusing them
  bool fail_on_nonfinite = false;  // a C holding NaN / Inf is an error, not a warning
  std::optional<bool> progress;    // --progress on / off; nullopt: auto (on past 5 s predicted)
  std::optional<int> timeout;      // --timeout SECONDS (0: none); nullopt: the model's bound
  std::string report;              // the report's path ("" none, "-" stdout)
  std::string machine;             // --machine ("" : found, algorithms/machine.hpp)
  std::string config, manifest;    // files the options came from (read, never written; guarded)
  bool has_a() const { return !a.ref.file.empty(); }
  bool has_b() const { return !b.ref.file.empty(); }
  bool has_c() const { return !c.file.empty(); }
};

// What the user asked, typed: every name of `o` parsed here, once (the edge, through
// job_options); the algorithms and the harness read only this. TESSERA_BANDS=N: the bands of C,
// for tests and comparisons (0: unset, the model's). Throws InputError for a name or number that
// is not one.
algorithms::Asked asked_of(const RunOptions& o);

// `o` parsed: every value checked against its row (asked_of) and every dataset reference parsed
// (left empty where `o` names none: a dry run of --m/--n/--k). Throws OptionError / InputError.
JobOptions job_options(const RunOptions& o);

}  // namespace tessera::job
