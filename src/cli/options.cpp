#include "cli/options.hpp"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <type_traits>
#include <variant>

#include "backend/backend.hpp"
#include "core/dtype.hpp"
#include "core/git_id.hpp"
#include "core/version.hpp"
#include "core/words.hpp"

namespace tessera::cli {
namespace {

const char* const kExitStatus =
    "Exit status: 0 success; 1 an error (bad input, I/O, a device, a rank lost); 2 a usage error (the command\n"
    "line or the config file); 3 verification ran and C is wrong (verify, run --verify).";

// Numbers that CLI11 alone would take wrongly: it reads '' as 0, 'nan' and 'inf' as such, 1e400
// as inf, -1 as 2^64 - 1 for an unsigned option, and a leading 0 as octal (010 = 8). These check
// the text as given, on the command line or in the config file; a failure is a usage error (exit
// 2) naming the option and the value (and, from a file, its line).

// A finite real number (--alpha, --beta, generate's --low/--high).
CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(text.c_str(), &end);
        const bool whole = !text.empty() && end == text.c_str() + text.size();
        if (!whole || !std::isfinite(x) || (errno == ERANGE && x == 0))
          return "must be a finite number, not '" + text + "'";
        return {};
      },
      "NUMBER");
}

// "1 to 2147483647", with the power of two where the bound is one.
std::string range_text(std::uint64_t low, std::uint64_t high) {
  std::string text = std::to_string(low) + " to " + std::to_string(high);
  if (high == UINT64_MAX) text += " (2^64 - 1)";
  if (high == static_cast<std::uint64_t>(INT64_MAX)) text += " (2^63 - 1)";
  return text;
}

// A whole number, written in decimal, from `low` to `high`; rewritten without leading zeros, so
// that CLI11 does not read it as octal (a transform: CLI11 hands a check() a copy). Its
// description, "INTEGER in [low - high]", is what --help-json reads the range from.
CLI::Validator whole_number(std::uint64_t low, std::uint64_t high) {
  const std::string range = range_text(low, high);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::string why = "must be a whole number from " + range + ", not '" + text + "'";
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return why;
        errno = 0;
        const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value < low || value > high) return why;
        text = std::to_string(value);
        return {};
      },
      "INTEGER in [" + std::to_string(low) + " - " + std::to_string(high) + "]");
}

// Adds a subcommand's options, and for each the key of the subcommand's table in config files,
// of the kind the option's C++ type says.
class Adder {
 public:
  Adder(CLI::App* sub, Schema* schema) : sub_(sub), schema_(schema) {}
  template <class T>
  CLI::Option* operator()(const std::string& names, T& target, const std::string& help) {
    CLI::Option* opt = sub_->add_option(names, target, help);
    if constexpr (std::is_same_v<T, std::string>) {
      return key(opt, Kind::text);
    } else if constexpr (std::is_floating_point_v<T>) {
      return key(opt, Kind::number);
    } else {
      // Whole numbers go through integer(): their range is stated once, for every reader of it.
      static_assert(!std::is_integral_v<T>, "a whole-number option: add it with integer(names, target, help, low)");
      return opt;
    }
  }
  // A whole-number option that takes `low` to `high` (its type's largest value by default): the
  // parser's check, the config key's range and --help-json's minimum and maximum are this one range.
  template <class T>
  CLI::Option* integer(const std::string& names, T& target, const std::string& help, std::uint64_t low,
                       std::uint64_t high = static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
    static_assert(std::is_integral_v<T>, "integer() is for whole-number options");
    return ranged(sub_->add_option(names, target, help), low, high);
  }
  CLI::Option* ranged(CLI::Option* opt, std::uint64_t low, std::uint64_t high) {
    opt->transform(whole_number(low, high));
    const auto key_bound = [](std::uint64_t v) {
      return static_cast<std::int64_t>(std::min<std::uint64_t>(v, INT64_MAX));
    };
    return key(opt, Kind::integer, key_bound(low), key_bound(high));
  }
  CLI::Option* flag(const std::string& names, bool& target, const std::string& help) {
    return key(sub_->add_flag(names, target, help), Kind::flag);
  }
  CLI::Option* shape(const std::string& names, std::string& target, const std::string& help) {
    return key(sub_->add_option(names, target, help), Kind::shape);
  }
  CLI::Option* list(const std::string& names, std::vector<std::string>& target, const std::string& help) {
    return key(sub_->add_option(names, target, help)->delimiter(','), Kind::list);
  }
  CLI::Option* key(CLI::Option* opt, Kind kind, std::int64_t low = INT64_MIN, std::int64_t high = INT64_MAX) {
    if (schema_ != nullptr) schema_->add(Key{sub_->get_name(), opt->get_single_name(), kind, opt, low, high, {}});
    return opt;
  }
  CLI::App* sub() const { return sub_; }

 private:
  CLI::App* sub_;
  Schema* schema_;
};

// -v / -vv / --log-level on every subcommand, and -q where `quiet` is given (run has its own).
void add_logging(Adder add, Logging& l, bool* quiet) {
  // Counted through a callback: how CLI11 fills an int flag changed between its versions.
  add.key(add.sub()->add_flag_function(
              "-v,--verbose", [&l](std::int64_t count) { l.verbose = static_cast<int>(count); },
              "log more on stderr: -v what each rank is doing (info), -vv details (debug)"),
          Kind::count, 0, 9);
  add("--log-level", l.level, "stderr log level: error, warn (default), info or debug; overrides -v")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  if (quiet != nullptr)
    add.flag("--quiet,-q", *quiet, "print nothing on stdout (errors and warnings still go to stderr)");
  add.sub()->footer(kExitStatus);
}

// One of `words()` (asked when a value is checked: a registry may grow at start-up), described as
// CLI11's IsMember describes its set ("{auto,cpu,cuda}"): --help-json reads the allowed values from
// it, and the bash completion from --help-json. A list option checks each of its items.
CLI::Validator one_of(std::function<std::vector<std::string>()> words) {
  const std::string description = "{" + join_words(words(), ",") + "}";
  return CLI::Validator(
      [words](std::string& text) -> std::string {
        const std::vector<std::string> allowed = words();
        return std::find(allowed.begin(), allowed.end(), text) != allowed.end() ? "" : not_one_of(text, allowed);
      },
      description);
}

// The check of a run option's row (job/run_options.hpp) as CLI11's validator, on the command line
// and (through run_checks) in the config file. A choice's description lists its words as CLI11's
// IsMember does ("{auto,cpu,cuda}"): --help-json reads the allowed values from it, and the bash
// completion from --help-json.
CLI::Validator row_check(const job::RunOption& row) {
  std::string description;
  if (row.kind == job::OptionKind::choice) description = "{" + join_words(job::choices_of(row), ",") + "}";
  if (row.kind == job::OptionKind::shape) description = "PRxPC";
  if (row.kind == job::OptionKind::size) description = "SIZE";
  return CLI::Validator([&row](std::string& text) { return job::check_value(row, text); }, description);
}

// One option of `run` from its row: bound to its member, of the config key's kind its value has.
CLI::Option* add_run_option(Adder& add, const job::RunOption& row, job::RunOptions& o) {
  const std::string names = "--" + row.name + (row.short_name.empty() ? "" : "," + row.short_name);
  CLI::Option* opt = std::visit(
      [&](auto member) -> CLI::Option* {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, job::ExtraValue>) {
          return add(names, o.extra[row.name], row.help);
        } else if constexpr (std::is_same_v<M, bool job::RunOptions::*>) {
          return add.flag(names, o.*member, row.help);
        } else if constexpr (std::is_same_v<M, double job::RunOptions::*>) {
          return add(names, o.*member, row.help)->check(finite_number());
        } else if constexpr (std::is_same_v<M, std::optional<int> job::RunOptions::*>) {
          // An option function, so that "not given" stays apart from 0 (--warmup's default depends on --repeat).
          auto* target = &(o.*member);
          return add.ranged(add.sub()->add_option_function<int>(
                                names, [target](const int& value) { *target = value; }, row.help),
                            static_cast<std::uint64_t>(row.low), static_cast<std::uint64_t>(row.high));
        } else if constexpr (std::is_same_v<M, std::string job::RunOptions::*>) {
          return row.kind == job::OptionKind::shape ? add.shape(names, o.*member, row.help)
                                                    : add(names, o.*member, row.help);
        } else {
          return add.integer(names, o.*member, row.help, static_cast<std::uint64_t>(row.low),
                             static_cast<std::uint64_t>(row.high));
        }
      },
      row.member);
  const bool checked =
      row.kind == job::OptionKind::choice || row.kind == job::OptionKind::shape || row.kind == job::OptionKind::size;
  if (checked) opt->check(row_check(row));
  if (row.show_default) opt->capture_default_str();
  return opt;
}

// Every row of the table, in its order; --a/--b/--c are required unless --dry-run (checked after parsing).
void add_run(Adder add, job::RunOptions& o) {
  for (const job::RunOption& row : job::run_options()) add_run_option(add, row, o);
}

void add_generate(Adder add, commands::GenerateOptions& gen) {
  add("--out,-o", gen.out, "FILE:/DATASET to create")->required();
  add.integer("--rows", gen.rows, "rows", 1)->required();
  add.integer("--cols", gen.cols, "columns", 1)->required();
  add("--dtype", gen.dtype, "f32 or f64")->check(one_of(dtype_words))->capture_default_str();
  add.integer("--seed", gen.seed, "random seed, 0 to 2^64 - 1", 0)->capture_default_str();
  add("--dist", gen.dist, "uniform [low, high), normal (0, 1) or integers [low, high]")->capture_default_str();
  add("--low", gen.low, "lower bound")->check(finite_number())->capture_default_str();
  add("--high", gen.high, "upper bound")->check(finite_number())->capture_default_str();
  add.shape("--chunk", gen.chunk, "chunked layout RxC (default contiguous; a new file only)");
  add.integer("--gzip", gen.gzip, "gzip level 1-9, 0 none (implies chunking; a new file only)", 0, 9)
      ->capture_default_str();
  add.flag("--overwrite", gen.overwrite,
           "replace an existing dataset at --out (an existing HDF5 file keeps its other datasets)");
}

void add_verify(Adder add, commands::VerifyOptions& vo) {
  add("--a", vo.a, "A as FILE:/DATASET")->required();
  add("--b", vo.b, "B as FILE:/DATASET")->required();
  add("--c", vo.c, "C as FILE:/DATASET (or a window of it, FILE:/C[r0:r1, c0:c1], FILE:/C[i])")->required();
  add.flag("--full", vo.full, "recompute A*B in float64 and compare every element (O(n^3): small sizes)");
  // Values that would check nothing (0 vectors, a bound of 0 or below) are refused, not replaced.
  const CLI::Validator above_zero(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !(x > 0)) return "must be above 0, not '" + value + "'";
        return {};
      },
      "> 0");
  add.integer("--vectors", vo.vectors, "Freivalds: random vectors (1 or more)", 1)->capture_default_str();
  add("--safety", vo.safety, "allowed multiple of the rounding bound (default: 8 Freivalds, 2 --full)")
      ->check(above_zero);
  add("--tolerance", vo.tolerance, "--full: also require rel. Frobenius error <= this")->check(above_zero);
  add("--dtype", vo.dtype, "precision C was computed in (default: C's stored type)")->check(one_of(dtype_words));
  add.flag("--transpose-a", vo.transpose_a, "as `run --transpose-a`: --a is stored K x M");
  add.flag("--transpose-b", vo.transpose_b, "as `run --transpose-b`: --b is stored N x K");
  add("--alpha", vo.alpha, "as `run --alpha`: C = alpha op(A) op(B)")->check(finite_number())->capture_default_str();
}

void add_bench_and_tune(Adder bench, commands::BenchOptions& bo, Adder tune, commands::TuneOptions& to) {
  bench("--backend", bo.backend, "auto, cpu or cuda")->check(one_of(backend::backend_words))->capture_default_str();
  bench.list("--sizes", bo.sizes, "sizes: N (cube) or MxNxK; default depends on the backend");
  bench.list("--dtypes", bo.dtypes, "f32,f64 (default both)")->check(one_of(dtype_words));
  bench.list("--kernels", bo.kernels, "kernels to time (default all of the backend's; `tessera info` lists them)")
      ->check(one_of(commands::bench_kernel_names));
  bench.integer("--warmup", bo.warmup, "untimed launches first (0 or more)", 0)->capture_default_str();
  bench.integer("--repeats", bo.repeats, "timed launches (1 or more); the median is reported", 1)
      ->capture_default_str();
  bench.integer("--seed", bo.seed, "random seed, 0 to 2^64 - 1", 0)->capture_default_str();
  bench("--json", bo.json_path, "write results as JSON ('-': to stdout, the table then to stderr)");
  bench("--csv", bo.csv_path, "write results as CSV");

  tune.list("--sizes", to.sizes, "sizes: N (cube) or MxNxK (default 1024,2048,4096,8192)");
  tune.list("--dtypes", to.dtypes, "f32,f64 (default both)")->check(one_of(dtype_words));
  tune("--out", to.out, "tune file to write (default $TESSERA_TUNE_FILE or ~/.cache/tessera/tuned-<gpu>.json)");
  tune.integer("--warmup", to.warmup, "untimed launches first (0 or more)", 0)->capture_default_str();
  tune.integer("--repeats", to.repeats, "timed launches (1 or more); the median decides", 1)->capture_default_str();
  tune.integer("--seed", to.seed, "random seed, 0 to 2^64 - 1", 0)->capture_default_str();
}

// [slurm]: read by slurm/common.sh through `tessera config show` (docs/configuration.md).
void add_slurm_keys(Schema& schema) {
  schema.add(Key{"slurm", "launcher", Kind::text, nullptr, 0, 0, {"auto", "srun-pmix", "srun-pmi2", "mpirun"}});
  schema.add(Key{"slurm", "out", Kind::text, nullptr, 0, 0, {}});
}

}  // namespace

void add_commands(CLI::App& app, Commands& c) {
  app.set_version_flag("--version", std::string("tessera ") + kVersion + " (git " + kGitId + ")");
  app.set_help_all_flag("--help-all", "Print the help of every subcommand and exit (the man page's text)");
  app.require_subcommand(1);
  CLI::Option* config = app.set_config("--config", "",
                                       "TOML file of options: a table per subcommand ([run], [generate], ...); "
                                       "the command line overrides it (docs/configuration.md)");
  app.config_formatter(std::make_shared<TomlConfig>(c.schema, config));
  // Every key TomlConfig hands on names an option (the schema is built from them): one CLI11
  // cannot place is tessera's mistake, never to be dropped in silence.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.footer(std::string("Run `tessera SUBCOMMAND --help` for a subcommand's options.\n") + kExitStatus);
  Schema* s = &c.schema;

  c.g = app.add_subcommand("generate", "write a random matrix into an HDF5 file");
  add_generate(Adder(c.g, s), c.gen);
  add_logging(Adder(c.g, s), c.logging, &c.logging.quiet);

  c.r = app.add_subcommand("run", "C = A * B over the MPI ranks; write C and report per-rank timing");
  add_run(Adder(c.r, s), c.ro);
  add_logging(Adder(c.r, s), c.logging, nullptr);
  c.r->footer(std::string("Options can also come from a TOML file: --config F.toml with a [run] table, keys =\n"
                          "option names (see configs/). Options on the command line override the file.\n") +
              kExitStatus);

  c.v = app.add_subcommand("verify", "check C against A * B computed independently in float64");
  add_verify(Adder(c.v, s), c.vo);
  add_logging(Adder(c.v, s), c.logging, &c.logging.quiet);

  c.in = app.add_subcommand("info", "version, build features, MPI, HDF5, BLAS and GPUs");
  Adder info(c.in, s);
  info.flag("--json", c.info_json, "print JSON");
  info.flag("--probe-network", c.info_probe,
            "instead: measure MPI between nodes (rank 0 and the first rank of another node) and within one, and "
            "print the machine file keys (internode_bytes_per_s, internode_latency_seconds, network_bytes_per_s)");
  add_logging(info, c.logging, &c.logging.quiet);

  c.rc = app.add_subcommand("recover",
                            "restore HDF5 files that a tessera run died while writing (kill -9, power loss) as they "
                            "were before it; every tessera command touching such a file does this first");
  c.rc->add_option("files", c.recover_files, "HDF5 files (each with a FILE.tessera-journal beside it)")->required();
  c.rc->add_flag("--force", c.recover_force,
                 "restore even a file that was changed after the run died (its later changes are undone)");
  add_logging(Adder(c.rc, s), c.logging, &c.logging.quiet);

  c.b = app.add_subcommand("bench", "time every kernel on one device against the vendor baseline");
  c.tu = app.add_subcommand(
      "tune",
      "time the full-precision GPU kernels (cuBLAS too) here and store the fastest for --kernel auto (cuBLAS "
      "unless beaten by more than 3%)");
  add_bench_and_tune(Adder(c.b, s), c.bo, Adder(c.tu, s), c.to);
  add_logging(Adder(c.b, s), c.logging, &c.logging.quiet);
  add_logging(Adder(c.tu, s), c.logging, &c.logging.quiet);
  add_slurm_keys(c.schema);

  // --config belongs to the top-level app; fallthrough lets `tessera SUBCOMMAND --config F.toml` reach it.
  for (CLI::App* sub : {c.g, c.r, c.v, c.in, c.rc, c.b, c.tu}) sub->fallthrough();

  c.cfg = app.add_subcommand("config", "config files: `tessera config show FILE`; `tessera config completion`");
  c.cfg->require_subcommand(1);
  c.show = c.cfg->add_subcommand("show",
                                 "check FILE as --config would and print its settings, one table.key=value a line "
                                 "(values in the form their options take: grid = [2, 1] as 2x1)");
  c.show->add_option("file", c.show_file, "the TOML config file")->required();
  c.show->add_flag("--json", c.show_json, "print them as JSON instead: {\"table\": {\"key\": value}}");
  add_logging(Adder(c.show, nullptr), c.logging, &c.logging.quiet);
  c.completion = c.cfg->add_subcommand(
      "completion", "print the bash completion script, made from these options (the build installs it)");
  c.completion->add_option("--out", c.completion_out, "write it to FILE instead of stdout");
  add_logging(Adder(c.completion, nullptr), c.logging, &c.logging.quiet);
  c.cfg->footer(kExitStatus);
}

}  // namespace tessera::cli
