// tessera: the command line. Thin: parses options, starts MPI, calls the job layer or a command, and turns
// every failure into one clear line and a nonzero exit on every rank.
#include <mpi.h>

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/completion.hpp"
#include "cli/config_toml.hpp"
#include "cli/manifest_toml.hpp"
#include "cli/help_json.hpp"
#include "cli/options.hpp"
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
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/atomic_file.hpp"
#include "job/run_job.hpp"
#include "report/progress.hpp"
#include "report/provenance.hpp"

namespace {

using tessera::cli::Commands;
using tessera::cli::kExitError;
using tessera::cli::kExitUsage;
using tessera::cli::kExitVerifyFailed;
using tessera::cli::Logging;

// 0 and 1 without MPI (`tessera config`).
bool mpi_started() {
  int started = 0;
  MPI_Initialized(&started);
  return started != 0;
}
int world_rank() {
  int rank = 0;
  if (mpi_started()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 1;
  if (mpi_started()) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
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

// Each line of `text` after `prefix`, on stderr.
void print_lines(const char* prefix, const std::string& text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::fprintf(stderr, "%s%s\n", prefix, text.substr(start, end - start).c_str());
    start = end + 1;
  }
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
                 config ? "" : " (see --help)");
  }
  return kExitUsage;
}

// `tessera run`: the job, or its dry run.
int run_or_plan(const CLI::App& app, Commands& c, int rank, const std::vector<std::string>& argv,
                const tessera::comm::Comm& world) {
  // Every report says how it was made (docs/report.md, "provenance"); the job adds its ranks'
  // hosts and GPUs.
  tessera::report::set_provenance(tessera::commands::collect_provenance(argv, options_given(app, c.r), false));
  if (rank == 0 && tessera::log::enabled(tessera::log::Level::debug))
    tessera::log::debug("options given: " + options_given(app, c.r).dump());
  const std::initializer_list<std::pair<const char*, std::string*>> operands = {
      {"--a", &c.ro.a}, {"--b", &c.ro.b}, {"--c", &c.ro.c}};
  if (!c.ro.manifest.empty()) {  // the products of the manifest (job/launch.hpp), read by every rank
    for (const auto& [name, value] : operands)
      if (!value->empty()) {
        if (rank == 0)
          std::fprintf(stderr, "tessera: error: run: %s and --manifest: the manifest names every product's A, B and C\n",
                       name);
        return kExitUsage;
      }
    c.ro.listed = tessera::cli::read_manifest(c.ro.manifest);
  } else if (!c.ro.dry_run) {
    for (const auto& [name, value] : operands)
      if (value->empty()) {
        if (rank == 0) std::fprintf(stderr, "tessera: error: run: %s is required (FILE:/DATASET)\n", name);
        return kExitUsage;
      }
  }
  try {
    tessera::job::check_run_options(c.ro);  // one option against another (a kernel of the backend named)
  } catch (const tessera::job::OptionError& e) {
    if (rank == 0) std::fprintf(stderr, "tessera: error: run: %s\n", e.what());
    return kExitUsage;
  }
  if (c.ro.dry_run)
    tessera::commands::dry_run(c.ro, world);
  else
    tessera::job::run_job(c.ro, world);
  return 0;
}

// `tessera info`: every rank's view (GPUs, Slurm variables differ per rank), printed by rank 0;
// or, with --probe-network, the network measured.
void info(const Commands& c, int rank, const tessera::comm::Comm& world) {
  if (c.info_probe) {
    const auto probe = tessera::comm::probe_network(world);
    if (rank == 0) std::fputs(tessera::comm::format_probe(probe).c_str(), stdout);
    return;
  }
  const auto views = world.gather(tessera::commands::collect_info(world).dump(), 0);
  if (rank != 0) return;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& view : views) all.push_back(nlohmann::json::parse(view));
  if (c.info_json)
    std::fputs(((views.size() == 1 ? all[0] : all).dump(2) + "\n").c_str(), stdout);
  else
    for (const auto& view : all) std::fputs(tessera::commands::format_info(view).c_str(), stdout);
}

// `tessera config show FILE`: checked as --config would, printed by rank 0 (a ConfigFileError: exit 2).
void show_config(const Commands& c, int rank) {
  const auto settings = tessera::cli::read_config(c.show_file, c.schema);
  if (rank != 0) return;
  for (const std::string& note : tessera::cli::config_notes()) print_lines("tessera: note: ", note);
  const std::string text =
      c.show_json ? tessera::cli::show_json(settings).dump(2) + "\n" : tessera::cli::show_lines(settings);
  std::fputs(text.c_str(), stdout);
}

// `tessera config completion`: the bash completion script (cli/completion.hpp).
void write_completion(CLI::App& app, const Commands& c) {
  const std::string script = tessera::cli::bash_completion(app);
  if (c.completion_out.empty())
    std::fputs(script.c_str(), stdout);
  else
    tessera::io::write_file_replacing(c.completion_out, script);
}

// The parsed subcommand, on every rank; its exit status.
int run_command(CLI::App& app, Commands& c, int rank, const std::vector<std::string>& argv) {
  if (*c.show) {
    show_config(c, rank);
    return 0;
  }
  if (*c.completion) {
    write_completion(app, c);
    return 0;
  }
  int code = 0;
  const tessera::comm::Comm world(MPI_COMM_WORLD);
  if (*c.rc) {
    world.step([&] {
      if (rank != 0) return;
      const auto outcome = tessera::commands::recover(c.recover_files, c.recover_force);
      for (const auto& line : outcome.lines) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      for (const auto& why : outcome.refusals) std::fprintf(stderr, "tessera: error: %s\n", why.c_str());
      if (!outcome.refusals.empty())
        throw tessera::InputError("recover: " + std::to_string(outcome.refusals.size()) + " of " +
                                  std::to_string(c.recover_files.size()) + " file(s) not recovered (above)");
    });
  } else if (*c.g) {
    // A step, so a failure on rank 0 is one line and a nonzero exit on every rank.
    world.step([&] {
      if (rank == 0) tessera::commands::generate(c.gen);
    });
  } else if (*c.r) {
    code = run_or_plan(app, c, rank, argv, world);
  } else if (*c.v) {
    const auto res = tessera::commands::verify(c.vo, world);
    // A failure goes to stderr, as run --verify's does: where a pipeline logs the reasons.
    if (rank == 0) std::fprintf(res.passed ? stdout : stderr, "%s\n", res.summary.c_str());
    code = res.passed ? 0 : kExitVerifyFailed;
  } else if (*c.in) {
    info(c, rank, world);
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

// -q (every subcommand but run, whose -q drops its table): nothing on stdout, where a JSON
// document asked for with `-` has already moved to a descriptor of its own (json_to_stdout).
void quiet_stdout() {
  std::fflush(stdout);
  const int null_fd = ::open("/dev/null", O_WRONLY);
  if (null_fd < 0) return;
  ::dup2(null_fd, STDOUT_FILENO);
  ::close(null_fd);
}

// Whether the command line asks for a job on a GPU (`tessera run`, not a dry run, not `--backend
// cpu`), so CUDA may start beside MPI (backend::start_gpu_early). Judged from the words alone: a
// wrong guess costs a GPU context started for nothing, or CUDA starting later, as it did before.
// TESSERA_GPU_EARLY=0 turns it off (comparisons); its value was checked with the environment's.
bool gpu_run_requested(int argc, char** argv, const std::string& env_error) {
  if (!env_error.empty() || !tessera::env::flag("TESSERA_GPU_EARLY", true)) return false;
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

// Parses the command line (and the config file), runs the subcommand on every rank, and turns
// every failure into one line and the exit status (docs/usage.md, "Exit status").
int parse_and_run(CLI::App& app, Commands& c, int rank, int argc, char** argv) {
  try {
    try {
      // CLI11 opens --config's file itself, blocking on a fifo: the path is checked first.
      for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--config" && i + 1 < argc) tessera::cli::check_config_path(argv[i + 1]);
        if (word.rfind("--config=", 0) == 0) tessera::cli::check_config_path(word.substr(9));
      }
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // Every rank parsed the same arguments and fails the same way; one prints.
      return parse_failed(app, e, rank);
    }
    tessera::log::configure(log_level(c.logging), rank);
    for (const std::string& note : tessera::cli::config_notes())
      if (rank == 0) print_lines("tessera: note: ", note);
    if (rank == 0 && mpi_started()) tessera::log::info("MPI transports: " + tessera::comm::mpi_start_choice().why);
    tessera::report::set_progress_mode(c.ro.progress, rank == 0);
    if ((*c.r && c.ro.report == "-") || (*c.b && c.bo.json_path == "-")) json_to_stdout();
    if (c.logging.quiet) quiet_stdout();
    // The config file is read, never written (job/job_paths.hpp).
    if (const auto* config = app.get_config_ptr(); config != nullptr && config->count() > 0)
      c.ro.config = c.vo.config = c.gen.config = c.bo.config = c.to.config = config->as<std::string>();
    return run_command(app, c, rank, std::vector<std::string>(argv, argv + argc));
  } catch (const tessera::cli::ConfigFileError& e) {
    // From --config or `config show`: the same on every rank; every error of the file, one a line.
    if (rank == 0) print_lines("tessera: error: ", e.what());
    return kExitUsage;
  } catch (const tessera::job::VerificationFailed& e) {
    if (rank == 0) std::fprintf(stderr, "tessera: verification failed: %s\n", e.what());
    return kExitVerifyFailed;
  } catch (const tessera::comm::JobError& e) {
    // Every rank agreed on this failure: rank 0 says it once, everyone exits nonzero.
    if (rank == 0) {
      if (e.origin() == 0)
        std::fprintf(stderr, "tessera: error: %s\n", e.what());
      else
        std::fprintf(stderr, "tessera: error (rank %d): %s\n", e.origin(), e.what());
    }
    return kExitError;
  } catch (const std::exception& e) {
    // A failure only this rank saw (outside a collective step): say it and end the whole job,
    // so no other rank waits forever.
    std::fprintf(stderr, "tessera: error%s: %s\n",
                 world_size() > 1 ? (" (rank " + std::to_string(rank) + ")").c_str() : "", e.what());
    std::fflush(stderr);
    if (world_size() > 1) MPI_Abort(MPI_COMM_WORLD, kExitError);
    return kExitError;
  }
}

// MPI started (and CUDA beside it where a GPU job is asked for); false, after saying why, when an
// environment variable tessera reads holds a value it does not understand.
bool start_mpi(int& argc, char**& argv, int& rank) {
  // Funneled: tessera's helper threads (reading and writing files, freeing page-locked memory)
  // run beside MPI calls of the main thread but never call MPI themselves.
  // Open MPI's transports are picked from the environment, so before MPI_Init (comm/mpi_start.hpp).
  tessera::comm::prepare_mpi_start();
  // CUDA's start-up (driver and context, ~0.2 s on the H200) runs on a thread beside MPI_Init, on
  // the node's first rank only: with every rank of a node starting the driver and a context at
  // once, a 2-rank job was 0.17 s slower (they wait for each other, and a rank that stays idle
  // would hold a context for nothing). Rank 0 is busy in every plan; the others start CUDA when
  // the job needs it, as before.
  // The TESSERA_* variables checked first (core/env.hpp): a value tessera does not accept is
  // refused by name, as a usage error.
  const tessera::env::Check env = tessera::env::check();
  std::string start_error = env.error.empty() ? tessera::comm::mpi_start_choice().error : env.error;
  if (gpu_run_requested(argc, argv, start_error) && tessera::comm::launcher_local_size() >= 1 &&
      tessera::comm::launcher_local_rank() == 0)
    tessera::backend::start_gpu_early(tessera::comm::launcher_local_rank());
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // CUDA's start goes on beside the plan (and the reads ahead); the backend waits for it.
  rank = world_rank();
  // A rank whose environment holds a value tessera does not understand stops the job; every
  // rank agrees (the environment may differ between nodes), the lowest such rank says why.
  int first_bad = start_error.empty() ? world_size() : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_bad < world_size()) {
    if (rank == first_bad) std::fprintf(stderr, "tessera: error: %s\n", start_error.c_str());
    tessera::backend::finish_gpu_start();
    MPI_Finalize();
    return false;
  }
  if (rank == 0)
    for (const std::string& warning : env.warnings) std::fprintf(stderr, "tessera: warning: %s\n", warning.c_str());
  return true;
}

// `tessera config ...` starts no MPI: the same check of the environment, alone.
bool environment_usable() {
  const tessera::env::Check env = tessera::env::check();
  for (const std::string& warning : env.warnings) std::fprintf(stderr, "tessera: warning: %s\n", warning.c_str());
  if (env.error.empty()) return true;
  std::fprintf(stderr, "tessera: error: %s\n", env.error.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // `tessera config ...` only reads a file: no MPI (the Slurm scripts run it in the batch step,
  // outside any launcher).
  const bool mpi = argc < 2 || std::string(argv[1]) != "config";
  int rank = 0;
  if (mpi ? !start_mpi(argc, argv, rank) : !environment_usable()) return kExitUsage;
  CLI::App app{"tessera: distributed dense matrix multiply, HDF5 in and out, one GPU (or CPU) per MPI rank", "tessera"};
  Commands c;
  tessera::cli::add_commands(app, c);
  tessera::cli::add_help_json(app, rank == 0);  // --help-json on every command (help_json.hpp)
  const int code = parse_and_run(app, c, rank, argc, argv);
  std::fflush(stdout);
  tessera::backend::finish_gpu_start();  // a run that failed before its backend started
  if (mpi) MPI_Finalize();
  return code;
}
