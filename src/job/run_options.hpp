#pragma once
// The options of `tessera run`, each once, in one table (run_options()): its name, kind, where its
// value lives in RunOptions, its help, its range, and for a choice the function that lists the
// words it takes, supplied by the layer that owns them (backend kinds and kernels, algorithms,
// comm paths, write routes, dtypes). Everything that shows or takes a run option derives from
// it: the command line and the config file's [run] keys (cli/options.cpp), --help-json and the
// man page and the bash completion made from them, libtessera's Options::set/get/names
// (api/options.cpp), the report's typed options (typed_options) and the Python dataclass (from
// --help-json). Adding an option is one row here plus its use; a program may register rows of
// its own (RunOptionRegistration: the tests' option, tests/unit/test_run_options.cpp).
//
// Every value is checked where it is typed (check_value: the words, the shape, the range), with the
// allowed words in the message; asked_of (job/job_options.hpp) is the one place the text becomes values.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "job/products.hpp"

namespace tessera::job {

struct RunOptions {
  std::string a, b, c;  // FILE:/DATASET
  std::string report;   // JSON report path ("" = none)
  std::string grid;     // "PRxPC" or "" (chosen)
  std::string backend = "auto";
  std::string kernel = "auto";
  std::string dtype = "auto";      // auto | f32 | f64
  std::string algorithm = "auto";  // auto | a name of algorithms::algorithm_names()
  std::string comm = "auto";       // auto | host | cuda-aware | nccl (comm/path.hpp)
  std::int64_t panel_width = 0;    // summa's K panel width; 0: chosen (algorithms/summa.cpp)
  std::string baseline;            // kernel to compare against on the same block ("" = none)
  bool overwrite = false;
  bool quiet = false;                // no table on stdout
  bool verify = false;               // Freivalds' check of C before it is written (job/freivalds.hpp)
  bool allow_nonfinite = false;      // multiply inputs holding NaN / Inf instead of refusing them
  bool fail_on_nonfinite = false;    // a C holding NaN / Inf is an error (nothing written), not a warning
  bool dry_run = false;              // print the plan instead (commands/dry_run.hpp; run_job ignores it)
  std::int64_t m = 0, n = 0, k = 0;  // --dry-run without input files
  int ranks = 0;                     // --dry-run for this many ranks (default: the job's)
  int ranks_per_node = 0;            // --dry-run: on nodes of this many ranks each (0: one node)
  std::string gpu_memory;            // --gpu-memory: "" (what the GPU has free) or e.g. 512M, 8G, bytes
  std::string progress = "auto";     // on | off | auto (on when the predicted time exceeds 5 s)
  std::string write = "auto";        // how C reaches the file: auto | in-place | gather (job/output.hpp)
  // C's storage (a new dataset; job/repeats.hpp's output_layout): chunks "RxC" ("" contiguous, or
  // 256x256 where compressed), a compression (none | gzip | lz4 | bzip2), gzip's level
  // (0: 1), HDF5's shuffle before it.
  std::string chunk;
  std::string compression = "none";
  // --c-dtype: C stored as auto | f16 | bf16 | f32 | f64 (job/plan.hpp decides auto).
  std::string c_dtype = "auto";
  std::int64_t compression_level = 0;
  bool shuffle = false;
  std::string machine;  // --machine: the rates the model predicts with (algorithms/machine.hpp)
  std::string config;   // the TOML file the options came from ("" = none): read, never written
  // C = alpha op(A) op(B) + beta C_old. op: the stored matrix, or its transpose (--transpose-a:
  // A's dataset is K x M), read block by block as such (io/operand.hpp), never copied. C_old is
  // the output dataset as it is before the run; read only when beta != 0.
  bool transpose_a = false, transpose_b = false;
  double alpha = 1, beta = 0;
  // Complex products (matrices in memory only, set through the C++ API's Options, not options of
  // `tessera run`): the imaginary parts of alpha and beta, and op(X) = X^H, the conjugate
  // transpose (a real matrix's transpose).
  double alpha_imag = 0, beta_imag = 0;
  bool conjugate_a = false, conjugate_b = false;
  // --repeat N --warmup W: the whole job runs W + N times in this launch, the report holds the
  // spread of the N counted runs (job/repeats.hpp). No warmup: 1 when repeat > 1, else 0.
  int repeat = 1;
  std::optional<int> warmup;
  // --timeout SECONDS: the longest a rank waits in MPI for the others before it ends itself
  // (comm/watchdog.hpp); 0: no bound. Not given: 30 s + 10 x the model's prediction of the run.
  std::optional<int> timeout;
  // Many products in one launch (job/launch.hpp): --manifest FILE (its [[product]] tables, read by
  // the command line into `listed`), or wildcards in --a/--b/--c; --keep-going runs the products
  // after a failed one.
  std::string manifest;
  std::vector<Product> listed;
  bool keep_going = false;
  // The values of registered rows (RunOptionRegistration), as text, by name.
  std::map<std::string, std::string> extra;
};

// What a row's value is.
enum class OptionKind {
  text,     // any text (a path, a name of a file)
  choice,   // one of the words of the row's choices()
  shape,    // PRxPC, two whole numbers above 0
  size,     // bytes: 512M, 8G, 1.5G, 4096
  integer,  // a whole number in [low, high]
  number,   // a finite real number
  flag,     // on or off
};

// A registered row's value: RunOptions::extra[name].
struct ExtraValue {};
// Where a row's value lives.
using Member =
    std::variant<std::string RunOptions::*, bool RunOptions::*, double RunOptions::*, std::int64_t RunOptions::*,
                 int RunOptions::*, std::optional<int> RunOptions::*, ExtraValue>;

// A choice row's words, listed once per row: they come from the build's catalogues (kernels,
// algorithms, dtypes, ...), which do not change while the process runs, and a call that checks
// its options (libtessera's, in a loop of small products) should not list them again.
struct ChoiceWords {
  std::once_flag listed;
  std::vector<std::string> words;
};

struct RunOption {
  std::string name;  // --name on the command line, the [run] key, Options::set's name, the report's
  OptionKind kind = OptionKind::text;
  Member member;
  std::string help;
  std::int64_t low = 0, high = std::numeric_limits<std::int64_t>::max();  // integer: its range
  std::function<std::vector<std::string>()> choices;                      // choice: the words it takes
  std::shared_ptr<ChoiceWords> choice_words = std::make_shared<ChoiceWords>();  // choices(), once (choices_of)
  std::string short_name;                                                 // "-q": a second spelling on the command line
  bool show_default = false;                                              // --help shows the default
  std::string empty_means;  // libtessera's setters: "" stands for this word (e.g. auto)
  bool optional = false;    // a text, shape or size that may be left empty (none, or chosen)
  bool in_library = true;   // libtessera's Options has it (not --dry-run: tessera::dry_run is a function)

  // Builder steps, so that a row reads as one line of the table.
  RunOption& shown() { return show_default = true, *this; }
  RunOption& also(std::string spelling) { return short_name = std::move(spelling), *this; }
  RunOption& empty_is(std::string word) { return empty_means = std::move(word), *this; }
  RunOption& may_be_empty() { return optional = true, *this; }
  RunOption& cli_only() { return in_library = false, *this; }
};

// The rows, in the order --help lists them.
const std::vector<RunOption>& run_options();
// The row of that name (another spelling, panel_width for panel-width, found too); nullptr for none.
const RunOption* find_run_option(const std::string& name);
// The row's words (choice), none where it takes any: its choices() asked on the first call, kept.
const std::vector<std::string>& choices_of(const RunOption& row);

// "" when `text` is a value the row takes, else why not, in words ("'nope' is not one of: auto,
// openblas, ... (did you mean ...)"): the words, the shape, the size or the range. The callers
// put the option's name before it ("--kernel: ", "FILE:3: run.kernel: ").
std::string check_value(const RunOption& row, const std::string& text);

// A run option that cannot be used: exit 2 on the command line, std::invalid_argument in libtessera.
class OptionError : public InputError {
 public:
  using InputError::InputError;
};

// Sets the row's value in `o` from text as typed (true/false for a flag); OptionError when it
// is not one the row takes.
void set_value(RunOptions& o, const RunOption& row, const std::string& text);
// The row's value in `o`, typed (null for an optional number not given).
nlohmann::json get_value(const RunOptions& o, const RunOption& row);

// What options were set to, typed, for the report's provenance (`options`) and C's
// `provenance` attribute: every row, and the config file.
nlohmann::json typed_options(const RunOptions& o);

// The checks of one option against another, before anything is launched (the command line, the
// dry run, libtessera): a kernel or baseline of a backend asked by name. OptionError.
void check_run_options(const RunOptions& o);

// "512M", "8G", "1.5G", "4096" (bytes) -> bytes; "" -> 0. Throws InputError naming the option.
std::size_t parse_bytes(const std::string& text, const char* option);

// Registers a row of a program's own (the tests'), after the table's; its value is kept in
// RunOptions::extra. At static initialisation, before any parse.
struct RunOptionRegistration {
  explicit RunOptionRegistration(RunOption row);
};

}  // namespace tessera::job
