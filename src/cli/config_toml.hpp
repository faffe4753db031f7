// tessera's config files (`--config FILE.toml`, `tessera config show FILE`): TOML read by toml++,
// one table per subcommand ([run], [generate], ...) plus [slurm] for the Slurm scripts. Every key
// is checked against the schema the command line is built with (cli/options.hpp): an unknown
// table or key, a value of the wrong type or out of its option's range is a ConfigFileError
// naming FILE:LINE and table.key, before anything runs. The values then reach CLI11 as if given
// on the command line, where options actually given there win (TomlConfig).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli {

// What a key's value must be.
enum class Kind {
  text,     // a string
  integer,  // a whole number in [low, high]
  number,   // a number (integer or float; the option's own check refuses nan and inf)
  flag,     // true or false
  count,    // a whole number >= 0: -v given that many times
  shape,    // "AxB", or an array [A, B] of positive integers
  list,     // an array of strings or integers, or one string "x,y"
};

struct Key {
  std::string table, name;  // [table] name = value
  Kind kind = Kind::text;
  CLI::Option* option = nullptr;  // the option it sets; none for [slurm]'s keys
  std::int64_t low = std::numeric_limits<std::int64_t>::min();
  std::int64_t high = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> choices;  // text without an option: the values allowed (empty: any)
};

// A config file that cannot be used: "FILE:LINE: table.key: what is wrong" (exit 2).
class ConfigFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The keys a config file may hold, in the order `tessera config show` prints them.
class Schema {
 public:
  void add(Key key) { keys_.push_back(std::move(key)); }
  const Key* find(const std::string& table, const std::string& name) const;
  bool has_table(const std::string& table) const;
  std::vector<std::string> tables() const;                         // in order of appearance
  std::vector<std::string> names(const std::string& table) const;  // the table's keys
  std::size_t index(const Key* key) const { return static_cast<std::size_t>(key - keys_.data()); }

 private:
  std::vector<Key> keys_;
};

// One key of the file, checked: the words its option takes (one, or a list's items) and the
// value as JSON.
struct Setting {
  const Key* key = nullptr;
  std::vector<std::string> words;
  nlohmann::json value;
  std::int64_t line = 0;
};

// Parses TOML `text` (named `path` in messages) and checks it against `schema`; the settings in
// the schema's order. Throws ConfigFileError holding every error of the file, one a line, in the
// order of its lines (a file that is not TOML: the parser's first).
std::vector<Setting> parse_config(const std::string& text, const std::string& path, const Schema& schema);
std::vector<Setting> read_config(const std::string& path, const Schema& schema);
// A TOML file's text (`what`: "the config file", "the manifest"), read without blocking and
// refused unless a regular file of at most 1 MiB; ConfigFileError naming the file.
std::string read_toml_text(const std::string& path, const std::string& what);
// What the files read so far said besides errors (a key spelled the other way: panel_width read as
// panel-width), once each; emptied by the call. main prints them on rank 0.
std::vector<std::string> config_notes();

// Throws ConfigFileError when `path` exists and is not a regular file of at most 1 MiB (a fifo
// would block the read forever, /dev/zero never end it); opens nothing. A missing file is left to
// the reader's own message.
void check_config_path(const std::string& path);

// `tessera config show FILE`: "table.key=value" lines (lists comma-separated), or JSON
// {"table": {"key": value}}.
std::string show_lines(const std::vector<Setting>& settings);
nlohmann::json show_json(const std::vector<Setting>& settings);

// CLI11's reader for `--config`: the file through parse_config, its settings as CLI11's config
// items. `config_option` is the --config option (for the file's name in messages).
class TomlConfig : public CLI::Config {
 public:
  TomlConfig(const Schema& schema, const CLI::Option* config_option) : schema_(schema), option_(config_option) {}
  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return {}; }
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

 private:
  const Schema& schema_;
  const CLI::Option* option_;
};

}  // namespace tessera::cli
