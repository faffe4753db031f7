// tessera's command line: the subcommands, their options, and the config keys those options
// make (cli/config_toml.hpp). main.cpp parses with them and runs the subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/config_toml.hpp"
#include "commands/bench.hpp"
#include "commands/generate.hpp"
#include "commands/tune.hpp"
#include "commands/verify.hpp"
#include "job/run_job.hpp"

namespace tessera::cli {

// Exit statuses (docs/usage.md, "Exit status"; every --help says them).
constexpr int kExitError = 1;         // any failure: bad input, I/O, device, a rank lost
constexpr int kExitUsage = 2;         // the command line or config file could not be used
constexpr int kExitVerifyFailed = 3;  // verification ran and the result is wrong

// -v / -vv / --log-level / -q on every subcommand (docs/usage.md, "Logging").
struct Logging {
  int verbose = 0;
  std::string level;
  bool quiet = false;  // every subcommand but run (RunOptions::quiet): nothing on stdout
};

// The subcommands and the options each fills.
struct Commands {
  commands::GenerateOptions gen;
  job::RunOptions ro;
  commands::VerifyOptions vo;
  commands::BenchOptions bo;
  commands::TuneOptions to;
  bool info_json = false;
  bool info_probe = false;
  std::vector<std::string> recover_files;
  bool recover_force = false;
  std::string show_file;  // tessera config show FILE [--json]
  bool show_json = false;
  std::string completion_out;  // tessera config completion [--out FILE]
  Logging logging;
  Schema schema;  // the config keys: one table per subcommand, and [slurm]
  CLI::App *g = nullptr, *r = nullptr, *v = nullptr, *in = nullptr, *b = nullptr, *tu = nullptr, *rc = nullptr;
  CLI::App *cfg = nullptr, *show = nullptr, *completion = nullptr;
};

// Builds `app`: its --config (read by TomlConfig over c.schema), --version, the subcommands.
void add_commands(CLI::App& app, Commands& c);

}  // namespace tessera::cli
