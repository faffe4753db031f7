#pragma once
// The bash completion script, made from tessera's own command line: every command's options and
// subcommands, and for each option that takes one of a few words (the run options' choices: the
// kernels of the registries, the algorithms, the comm paths, ...) those words, as --help-json
// lists them (help_json.hpp). Written by `tessera config completion` at build time
// (src/CMakeLists.txt), so it cannot fall behind the options.
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

std::string bash_completion(CLI::App& app);

}  // namespace tessera::cli
