#pragma once
// `tessera <command> --help-json`: a command's options as JSON, read from CLI11's own description
// of them (names, value type, default, allowed values and range from the validators, help text),
// so that a program driving tessera (the Python package) checks its arguments against the binary
// it runs, not against a copy. Documented in docs/usage.md ("Options as JSON"), JSON Schema in
// docs/schema/options.schema.json.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace tessera::cli {

// The options of `command` (and, where it falls through to its parent, the parent's: --config),
// as the document "tessera.options/1".
nlohmann::json describe_command(CLI::App& command);

// Adds --help-json to `app` and to each of its subcommands. Given, it prints describe_command()
// of that command on stdout (when `print`: one rank of a parallel launch) and ends the parse as
// --help does (CLI::Success, exit 0), before any required option is checked.
void add_help_json(CLI::App& app, bool print);

}  // namespace tessera::cli
