// tessera: the command line. Thin: parses options, starts MPI, calls the job layer or a command, and turns
// every failure into one clear line and a nonzero exit on every rank.
#include <mpi.h>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "comm/mpi_network.hpp"
#include "comm/mpi_start.hpp"
#include "commands/bench.hpp"
#include "commands/dry_run.hpp"
#include "commands/generate.hpp"
#include "commands/info.hpp"
#include "commands/provenance.hpp"
#include "commands/recover.hpp"
#include "commands/tune.hpp"
#include "commands/verify.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "help_json.hpp"
#include "io/atomic_file.hpp"
#include "job/run_job.hpp"
#include "report/progress.hpp"
#include "report/provenance.hpp"

namespace {

// Exit statuses (docs/usage.md, "Exit status").
constexpr int kExitError = 1;         // any failure: bad input, I/O, device, a rank lost
constexpr int kExitUsage = 2;         // the command line or config file could not be parsed
constexpr int kExitVerifyFailed = 3;  // verification ran and the result is wrong

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Numbers that CLI11 alone would take wrongly: it reads '' as 0, 'nan' and 'inf' as such, 1e400
// as inf, -1 as 2^64 - 1 for an unsigned option, and a leading 0 as octal (010 = 8). These check
// the text as given, on the command line or in the config file; a failure is a usage error (exit
// 2) naming the option and the value.

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

// A whole number, written in decimal, from `low` to `high` (--seed, generate's --rows/--cols);
// rewritten without leading zeros, so that CLI11 does not read it as octal (a transform: CLI11
// hands a check() a copy).
CLI::Validator whole_number(std::uint64_t low, std::uint64_t high, const std::string& range) {
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
      "INTEGER");
}
CLI::Validator seed_number() { return whole_number(0, UINT64_MAX, "0 to 18446744073709551615 (2^64 - 1)"); }

void add_run_options(CLI::App* run, tessera::job::RunOptions& o) {
  // --a/--b/--c are required unless --dry-run (checked after parsing).
  run->add_option("--a", o.a, "A (M x K) as FILE:/DATASET");
  run->add_option("--b", o.b, "B (K x N) as FILE:/DATASET");
  run->add_option("--c", o.c, "where to write C (M x N), FILE:/DATASET");
  run->add_option("--report", o.report,
                  "write the JSON report here (schema: docs/report.md); '-': to stdout, the table then to stderr");
  run->add_option("--algorithm", o.algorithm,
                  "panels (C blocks from whole A rows and B columns), summa (2-D blocks, panels of K broadcast along "
                  "grid rows and columns), ksplit (K split, partials summed; NCCL on GPUs) or auto")
      ->capture_default_str();
  run->add_option("--comm", o.comm,
                  "summa/ksplit data path: nccl (GPU to GPU), cuda-aware (MPI on GPU memory, if the library "
                  "reports it), host (MPI on pinned host memory) or auto (the first that applies)")
      ->capture_default_str();
  run->add_option("--panel-width", o.panel_width, "summa: K panel width (0: 1024 on GPUs, 256 on CPUs)")
      ->capture_default_str();
  run->add_option("--grid", o.grid, "process grid PRxPC (default: chosen from M, N, K and the rank count)");
  run->add_option("--backend", o.backend, "auto (GPU when visible), cpu or cuda")->capture_default_str();
  run->add_option("--kernel", o.kernel, "kernel of the backend; auto = the backend's default (see `tessera info`)")
      ->capture_default_str();
  run->add_option("--dtype", o.dtype, "compute precision: auto (f32 if A and B are float32, else f64), f32, f64")
      ->capture_default_str();
  run->add_option("--baseline", o.baseline, "also time this kernel on each rank's block and report the speedup");
  run->add_flag("--overwrite", o.overwrite,
                "replace an existing dataset at --c (an existing HDF5 file keeps its other datasets)");
  run->add_flag("--quiet,-q", o.quiet, "print no report table");
  run->add_flag("--verify", o.verify, "check C with Freivalds' test (O(n^2)) before writing it; fail if wrong");
  run->add_flag("--allow-nonfinite", o.allow_nonfinite, "multiply inputs holding NaN/Inf instead of refusing them");
  run->add_flag("--fail-on-nonfinite", o.fail_on_nonfinite,
                "a C holding NaN/Inf (e.g. overflow) is an error and is not written (default: a warning)");
  run->add_option("--progress", o.progress,
                  "progress on stderr: auto (runs predicted over 5 s, and on a terminal any run past 3 s), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  run->add_option("--gpu-memory", o.gpu_memory,
                  "GPU memory a rank may use (512M, 8G, ...); a block that needs more is computed out of core");
  run->add_option("--write", o.write,
                  "how C reaches the output: in-place (every rank writes its own rows), gather (rank 0 writes all) "
                  "or auto (in place where every rank sees the output file)")
      ->capture_default_str();
  run->add_option("--machine", o.machine,
                  "rates the model predicts with (auto's choice, --dry-run): a name in configs/machines (default, "
                  "h200-2gpu) or a JSON file (default: $TESSERA_MACHINE_FILE, else default.json)");
  run->add_flag("--transpose-a", o.transpose_a,
                "--a is stored K x M: use its transpose as A (read as such, the file is not copied)");
  run->add_flag("--transpose-b", o.transpose_b, "--b is stored N x K: use its transpose as B");
  run->add_option("--alpha", o.alpha, "C = alpha op(A) op(B) + beta C_old")
      ->check(finite_number())
      ->capture_default_str();
  run->add_option("--beta", o.beta,
                  "C = alpha op(A) op(B) + beta C_old; beta != 0 reads the existing C (--c, M x N) and needs "
                  "--overwrite (not with --repeat > 1 or --warmup > 0)")
      ->check(finite_number())
      ->capture_default_str();
  run->add_option("--repeat", o.repeat,
                  "run the whole job (read, compute, write, commit) N times in this launch; the report gives the "
                  "median, min and max of the runs and its table the last run (--dry-run ignores it)")
      ->capture_default_str();
  // Its default depends on --repeat: an option function, so that "not given" stays apart from 0.
  run->add_option_function<int>(
      "--warmup", [&o](const int& runs) { o.warmup = runs; },
      "whole runs before the --repeat ones, in no statistic of the report (default: 1 with --repeat > 1, else 0)");
  run->add_flag("--dry-run", o.dry_run, "print grid, memory, communication and predicted time; run nothing");
  run->add_option("--m", o.m, "--dry-run: rows of A and C (instead of --a/--b)");
  run->add_option("--n", o.n, "--dry-run: columns of B and C");
  run->add_option("--k", o.k, "--dry-run: columns of A, rows of B");
  run->add_option("--ranks", o.ranks, "--dry-run: plan for this many ranks (default: the job's)")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              if (std::stoll(text) >= 1) return std::string();
            } catch (const std::exception&) {
              return std::string();  // not a number: CLI11's conversion says so
            }
            return "must be at least 1 (got " + text + ")";
          },
          "RANKS >= 1"));
  run->add_option("--ranks-per-node", o.ranks_per_node,
                  "--dry-run: on nodes of this many ranks each, placed in blocks (default: all on one node); messages "
                  "between nodes at the machine file's internode rate")
      ->check(CLI::PositiveNumber);
  // --config belongs to the top-level app (CLI11 reads subcommand options from a [run] table
  // there); fallthrough lets `tessera run --config F.toml` reach it.
  run->fallthrough();
  run->footer(
      "Options can also come from a TOML file: --config F.toml with a [run] table, keys = option names\n"
      "(see configs/). Options on the command line override the file.");
}

// -v / -vv / --log-level on every subcommand (docs/usage.md, "Logging").
struct Logging {
  int verbose = 0;
  std::string level;
};
void add_logging(CLI::App* sub, Logging& l) {
  // Counted through a callback: how CLI11 fills an int flag changed between its versions.
  sub->add_flag_function(
      "-v,--verbose", [&l](std::int64_t count) { l.verbose = static_cast<int>(count); },
      "log more on stderr: -v what each rank is doing (info), -vv details (debug)");
  sub->add_option("--log-level", l.level, "stderr log level: error, warn (default), info or debug; overrides -v")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
}
tessera::log::Level log_level(const Logging& l) {
  tessera::log::Level level = l.verbose >= 2   ? tessera::log::Level::debug
                              : l.verbose == 1 ? tessera::log::Level::info
                                               : tessera::log::Level::warn;
  if (!l.level.empty()) tessera::log::parse_level(l.level, level);
  return level;
}

// `--report -` (or `--json -`): the JSON document alone goes to the standard output; whatever else
// tessera prints there (the table, the plan) goes to stderr instead.
void json_to_stdout() {
  std::fflush(stdout);
  const int json_fd = ::dup(STDOUT_FILENO);
  if (json_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return;
  tessera::io::set_stdout_fd(json_fd);
}

// The options given to `sub` (and to the program itself: --config, logging), on the command line
// or in the config file, as the report's provenance records them: name -> value as given (a list
// when given more than once or as a list).
nlohmann::json options_given(const CLI::App& app, const CLI::App* sub) {
  nlohmann::json given = nlohmann::json::object();
  for (const CLI::App* a : {&app, sub}) {
    if (a == nullptr) continue;
    for (const CLI::Option* opt : a->get_options()) {
      if (opt->count() == 0) continue;
      const std::string name = opt->get_single_name();
      if (name == "help" || name == "version") continue;
      const auto& values = opt->results();
      given[name] = values.size() == 1 ? nlohmann::json(values.front()) : nlohmann::json(values);
    }
  }
  return given;
}

// CLI11's message as one line: "tessera: error: ..." and exit 2, like other command-line tools.
// --help and --version arrive here too (as exit code 0) and print what they print.
int parse_failed(CLI::App& app, const CLI::ParseError& e, int rank) {
  if (e.get_exit_code() == 0) return rank == 0 ? app.exit(e) : 0;
  if (rank == 0) {
    std::string text = e.what();
    for (char& ch : text)
      if (ch == '\n') ch = ' ';
    while (!text.empty() && text.back() == ' ') text.pop_back();
    // CLI11's wording for two common cases, in the words of this tool.
    const std::string conv = "Could not convert: ";
    if (const auto eq = text.find(" = "); text.rfind(conv, 0) == 0 && eq != std::string::npos) {
      text = "invalid " + text.substr(conv.size(), eq - conv.size()) + " '" + text.substr(eq + 3) +
             "': not a number of the option's type, or out of its range";
    } else if (const auto at = text.find(": At Most 1 required but received"); at != std::string::npos) {
      text = text.substr(0, at) + " is given more than once (on the command line or in the config file)";
    } else if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && app.get_subcommands().empty()) {
      // `tessera frobnicate`: CLI11 says only that a subcommand is required.
      const std::vector<std::string> rest = app.remaining();
      if (!rest.empty() && !rest.front().empty() && rest.front()[0] != '-') {
        std::string names;
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
          names += (names.empty() ? "" : ", ") + sub->get_name();
        text = "unknown subcommand '" + rest.front() + "' (choose: " + names + ")";
      }
    }
    const bool config =
        dynamic_cast<const CLI::ConfigError*>(&e) != nullptr || dynamic_cast<const CLI::FileError*>(&e) != nullptr;
    std::fprintf(stderr, "tessera: error: %s%s%s\n", config ? "config file: " : "", text.c_str(),
                 dynamic_cast<const CLI::ConfigError*>(&e) ? " (unknown key, or not under [run]?)"
                 : config                                  ? ""
                                                           : " (see --help)");
  }
  return kExitUsage;
}

// The subcommands and the options each fills.
struct Commands {
  tessera::commands::GenerateOptions gen;
  tessera::job::RunOptions ro;
  tessera::commands::VerifyOptions vo;
  tessera::commands::BenchOptions bo;
  tessera::commands::TuneOptions to;
  bool info_json = false;
  std::vector<std::string> recover_files;
  bool info_probe = false;
  Logging logging;
  CLI::App *g = nullptr, *r = nullptr, *v = nullptr, *in = nullptr, *b = nullptr, *tu = nullptr, *rc = nullptr;
};

void add_job_commands(CLI::App& app, Commands& c) {
  c.g = app.add_subcommand("generate", "write a random matrix into an HDF5 file");
  c.g->add_option("--out,-o", c.gen.out, "FILE:/DATASET to create")->required();
  const CLI::Validator extent = whole_number(1, INT64_MAX, "1 to 9223372036854775807 (2^63 - 1)");
  c.g->add_option("--rows", c.gen.rows, "rows")->transform(extent)->required();
  c.g->add_option("--cols", c.gen.cols, "columns")->transform(extent)->required();
  c.g->add_option("--dtype", c.gen.dtype, "f32 or f64")->capture_default_str();
  c.g->add_option("--seed", c.gen.seed, "random seed, 0 to 2^64 - 1")->transform(seed_number())->capture_default_str();
  c.g->add_option("--dist", c.gen.dist, "uniform [low, high), normal (0, 1) or integers [low, high]")
      ->capture_default_str();
  c.g->add_option("--low", c.gen.low, "lower bound")->check(finite_number())->capture_default_str();
  c.g->add_option("--high", c.gen.high, "upper bound")->check(finite_number())->capture_default_str();
  c.g->add_option("--chunk", c.gen.chunk, "chunked layout RxC (default contiguous; a new file only)");
  c.g->add_option("--gzip", c.gen.gzip, "gzip level 1-9 (implies chunking; a new file only)")->capture_default_str();
  c.g->add_flag("--overwrite", c.gen.overwrite,
                "replace an existing dataset at --out (an existing HDF5 file keeps its other datasets)");

  c.r = app.add_subcommand("run", "C = A * B over the MPI ranks; write C and report per-rank timing");
  add_run_options(c.r, c.ro);

  c.v = app.add_subcommand("verify", "check C against A * B computed independently in float64");
  c.v->add_option("--a", c.vo.a, "A as FILE:/DATASET")->required();
  c.v->add_option("--b", c.vo.b, "B as FILE:/DATASET")->required();
  c.v->add_option("--c", c.vo.c, "C as FILE:/DATASET")->required();
  c.v->add_flag("--full", c.vo.full, "recompute A*B in float64 and compare every element (O(n^3): small sizes)");
  // Values that would check nothing (0 vectors, a bound of 0 or below) are refused, not replaced.
  const CLI::Validator above_zero(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !(x > 0)) return "must be above 0, not '" + value + "'";
        return {};
      },
      "> 0");
  c.v->add_option("--vectors", c.vo.vectors, "Freivalds: random vectors (1 or more)")
      ->check(above_zero)
      ->capture_default_str();
  c.v->add_option("--safety", c.vo.safety, "allowed multiple of the rounding bound (default: 8 Freivalds, 2 --full)")
      ->check(above_zero);
  c.v->add_option("--tolerance", c.vo.tolerance, "--full: also require rel. Frobenius error <= this")
      ->check(above_zero);
  c.v->add_option("--dtype", c.vo.dtype, "precision C was computed in (default: C's stored type)");
  c.v->add_flag("--transpose-a", c.vo.transpose_a, "as `run --transpose-a`: --a is stored K x M");
  c.v->add_flag("--transpose-b", c.vo.transpose_b, "as `run --transpose-b`: --b is stored N x K");
  c.v->add_option("--alpha", c.vo.alpha, "as `run --alpha`: C = alpha op(A) op(B)")
      ->check(finite_number())
      ->capture_default_str();

  c.in = app.add_subcommand("info", "version, build features, MPI, HDF5, BLAS and GPUs");
  c.in->add_flag("--json", c.info_json, "print JSON");
  c.in->add_flag("--probe-network", c.info_probe,
                 "instead: measure MPI between nodes (rank 0 and the first rank of another node) and within one, "
                 "and print the machine file keys (internode_bytes_per_s, internode_latency_seconds, "
                 "network_bytes_per_s)");

  c.rc = app.add_subcommand("recover",
                            "restore HDF5 files that a tessera run died while writing (kill -9, power loss) as they "
                            "were before it; every tessera command touching such a file does this first");
  c.rc->add_option("files", c.recover_files, "HDF5 files (each with a FILE.tessera-journal beside it)")->required();
  for (CLI::App* sub : {c.g, c.r, c.v, c.in, c.rc}) add_logging(sub, c.logging);
}

void add_device_commands(CLI::App& app, Commands& c) {
  c.b = app.add_subcommand("bench", "time every kernel on one device against the vendor baseline");
  c.b->add_option("--backend", c.bo.backend, "auto, cpu or cuda")->capture_default_str();
  c.b->add_option("--sizes", c.bo.sizes, "sizes: N (cube) or MxNxK; default depends on the backend")->delimiter(',');
  c.b->add_option("--dtypes", c.bo.dtypes, "f32,f64 (default both)")->delimiter(',');
  c.b->add_option("--kernels", c.bo.kernels, "kernels to time (default all)")->delimiter(',');
  c.b->add_option("--warmup", c.bo.warmup, "untimed launches first")->capture_default_str();
  c.b->add_option("--repeats", c.bo.repeats, "timed launches; the median is reported")->capture_default_str();
  c.b->add_option("--seed", c.bo.seed, "random seed, 0 to 2^64 - 1")->transform(seed_number())->capture_default_str();
  c.b->add_option("--json", c.bo.json_path, "write results as JSON");
  c.b->add_option("--csv", c.bo.csv_path, "write results as CSV");

  c.tu = app.add_subcommand(
      "tune", "time the full-precision GPU kernels (cuBLAS too) here and store the fastest for --kernel auto");
  c.tu->add_option("--sizes", c.to.sizes, "sizes: N (cube) or MxNxK (default 1024,2048,4096,8192)")->delimiter(',');
  c.tu->add_option("--dtypes", c.to.dtypes, "f32,f64 (default both)")->delimiter(',');
  c.tu->add_option("--out", c.to.out,
                   "tune file to write (default $TESSERA_TUNE_FILE or ~/.cache/tessera/tuned-<gpu>.json)");
  c.tu->add_option("--warmup", c.to.warmup, "untimed launches first")->capture_default_str();
  c.tu->add_option("--repeats", c.to.repeats, "timed launches; the median decides")->capture_default_str();
  c.tu->add_option("--seed", c.to.seed, "random seed, 0 to 2^64 - 1")->transform(seed_number())->capture_default_str();
  for (CLI::App* sub : {c.b, c.tu}) add_logging(sub, c.logging);
}

// The parsed subcommand, on every rank; its exit status.
int run_command(const CLI::App& app, Commands& c, int rank, const std::vector<std::string>& argv) {
  int code = 0;
  const tessera::comm::Comm world(MPI_COMM_WORLD);
  if (*c.rc) {
    world.step([&] {
      if (rank != 0) return;
      for (const auto& line : tessera::commands::recover(c.recover_files)) std::printf("%s\n", line.c_str());
    });
  } else if (*c.g) {
    // A step, so a failure on rank 0 is one line and a nonzero exit on every rank.
    world.step([&] {
      if (rank == 0) tessera::commands::generate(c.gen);
    });
  } else if (*c.r) {
    // Every report says how it was made (docs/report.md, "provenance"); the job adds its ranks'
    // hosts and GPUs.
    tessera::report::set_provenance(tessera::commands::collect_provenance(argv, options_given(app, c.r), false));
    if (rank == 0 && tessera::log::enabled(tessera::log::Level::debug))
      tessera::log::debug("options given: " + options_given(app, c.r).dump());
    if (!c.ro.dry_run)
      for (const auto& [name, value] : {std::pair{"--a", &c.ro.a}, {"--b", &c.ro.b}, {"--c", &c.ro.c}})
        if (value->empty()) {
          if (rank == 0) std::fprintf(stderr, "tessera: error: run: %s is required (FILE:/DATASET)\n", name);
          return kExitUsage;
        }
    if (c.ro.dry_run)
      tessera::commands::dry_run(c.ro, world);
    else
      tessera::job::run_job(c.ro, world);
  } else if (*c.v) {
    const auto res = tessera::commands::verify(c.vo, world);
    // A failure goes to stderr, as run --verify's does: where a pipeline logs the reasons.
    if (rank == 0) std::fprintf(res.passed ? stdout : stderr, "%s\n", res.summary.c_str());
    code = res.passed ? 0 : kExitVerifyFailed;
  } else if (*c.in && c.info_probe) {
    const auto probe = tessera::comm::probe_network(world);
    if (rank == 0) std::fputs(tessera::comm::format_probe(probe).c_str(), stdout);
  } else if (*c.in) {
    // Every rank's view (GPUs, Slurm variables differ per rank), printed by rank 0.
    const auto views = world.gather(tessera::commands::collect_info(world).dump(), 0);
    if (rank == 0) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& view : views) all.push_back(nlohmann::json::parse(view));
      if (c.info_json)
        std::fputs(((views.size() == 1 ? all[0] : all).dump(2) + "\n").c_str(), stdout);
      else
        for (const auto& view : all) std::fputs(tessera::commands::format_info(view).c_str(), stdout);
    }
  } else if (*c.b) {
    tessera::report::set_provenance(tessera::commands::collect_provenance(argv, options_given(app, c.b), true));
    world.step([&] {
      if (rank == 0) code = tessera::commands::run_bench(c.bo);
    });
  } else if (*c.tu) {
    world.step([&] {
      if (rank == 0) code = tessera::commands::run_tune(c.to);
    });
  }
  return code;
}

// Whether the command line asks for a job on a GPU (`tessera run`, not a dry run, not `--backend
// cpu`), so CUDA may start beside MPI (backend::start_gpu_early). Judged from the words alone: a
// wrong guess costs a GPU context started for nothing, or CUDA starting later, as it did before.
// TESSERA_GPU_EARLY=0 turns it off (comparisons); a value other than 0 or 1 is an error.
bool gpu_run_requested(int argc, char** argv, std::string& error) {
  if (const char* v = std::getenv("TESSERA_GPU_EARLY"); v != nullptr && *v != '\0') {
    if (std::string(v) == "0") return false;
    if (std::string(v) != "1") {
      error = "TESSERA_GPU_EARLY='" + std::string(v) + "' is not 0 or 1";
      return false;
    }
  }
  bool run = false;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "run") run = true;
    if (word == "--dry-run" || word == "--backend=cpu" ||
        (word == "--backend" && i + 1 < argc && std::string(argv[i + 1]) == "cpu"))
      return false;
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  // Funneled: tessera's helper threads (reading and writing files, freeing page-locked memory)
  // run beside MPI calls of the main thread but never call MPI themselves.
  // Open MPI's transports are picked from the environment, so before MPI_Init (comm/mpi_start.hpp).
  tessera::comm::prepare_mpi_start();
  // CUDA's start-up (driver and context, ~0.2 s on the H200) runs on a thread beside MPI_Init, on
  // the node's first rank only: with every rank of a node starting the driver and a context at
  // once, a 2-rank job was 0.17 s slower (they wait for each other, and a rank that stays idle
  // would hold a context for nothing). Rank 0 is busy in every plan; the others start CUDA when
  // the job needs it, as before.
  std::string start_error = tessera::comm::mpi_start_choice().error;
  if (gpu_run_requested(argc, argv, start_error) && tessera::comm::launcher_local_size() >= 1 &&
      tessera::comm::launcher_local_rank() == 0)
    tessera::backend::start_gpu_early(tessera::comm::launcher_local_rank());
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  tessera::backend::finish_gpu_start();
  const int rank = world_rank();
  {
    // A rank whose environment holds a value tessera does not understand stops the job; every
    // rank agrees (the environment may differ between nodes), the lowest such rank says why.
    int first_bad = start_error.empty() ? world_size() : rank;
    MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_bad < world_size()) {
      if (rank == first_bad) std::fprintf(stderr, "tessera: error: %s\n", start_error.c_str());
      MPI_Finalize();
      return kExitUsage;
    }
  }

  CLI::App app{"tessera: distributed dense matrix multiply, HDF5 in and out, one GPU (or CPU) per MPI rank"};
  app.set_version_flag("--version", std::string("tessera ") + tessera::kVersion);
  app.require_subcommand(1);
  app.set_config("--config", "", "TOML file of options: a [run] table holds `tessera run` options");
  app.allow_config_extras(CLI::config_extras_mode::error);

  Commands c;
  add_job_commands(app, c);
  add_device_commands(app, c);
  tessera::cli::add_help_json(app, rank == 0);  // --help-json on every command (help_json.hpp)

  int code = 0;
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // Every rank parsed the same arguments and fails the same way; one prints.
      code = parse_failed(app, e, rank);
      MPI_Finalize();
      return code;
    }
    tessera::log::configure(log_level(c.logging), rank);
    if (rank == 0) tessera::log::info("MPI transports: " + tessera::comm::mpi_start_choice().why);
    tessera::report::set_progress_mode(c.ro.progress, rank == 0);
    if ((*c.r && c.ro.report == "-") || (*c.b && c.bo.json_path == "-")) json_to_stdout();
    // The config file is read, never written (job/job_paths.hpp).
    if (const auto* config = app.get_config_ptr(); config != nullptr && config->count() > 0)
      c.ro.config = c.vo.config = c.gen.config = c.bo.config = c.to.config = config->as<std::string>();
    code = run_command(app, c, rank, std::vector<std::string>(argv, argv + argc));
  } catch (const tessera::job::VerificationFailed& e) {
    if (rank == 0) std::fprintf(stderr, "tessera: verification failed: %s\n", e.what());
    code = kExitVerifyFailed;
  } catch (const tessera::comm::JobError& e) {
    // Every rank agreed on this failure: rank 0 says it once, everyone exits nonzero.
    if (rank == 0) {
      if (e.origin() == 0)
        std::fprintf(stderr, "tessera: error: %s\n", e.what());
      else
        std::fprintf(stderr, "tessera: error (rank %d): %s\n", e.origin(), e.what());
    }
    code = kExitError;
  } catch (const std::exception& e) {
    // A failure only this rank saw (outside a collective step): say it and end the whole job,
    // so no other rank waits forever.
    std::fprintf(stderr, "tessera: error%s: %s\n",
                 world_size() > 1 ? (" (rank " + std::to_string(rank) + ")").c_str() : "", e.what());
    std::fflush(stderr);
    if (world_size() > 1) MPI_Abort(MPI_COMM_WORLD, kExitError);
    code = kExitError;
  }
  std::fflush(stdout);
  MPI_Finalize();
  return code;
}
