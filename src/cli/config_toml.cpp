#include "cli/config_toml.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "cli/toml_guards.hpp"
#include "core/file_kind.hpp"
#include "core/words.hpp"

namespace tessera::cli {

namespace {
// A config file holds a few dozen settings: 1 MiB is far beyond any real one.
constexpr off_t kMaxConfigBytes = off_t{1} << 20;
}  // namespace

const Key* Schema::find(const std::string& table, const std::string& name) const {
  for (const Key& key : keys_)
    if (key.table == table && key.name == name) return &key;
  return nullptr;
}

bool Schema::has_table(const std::string& table) const {
  return std::any_of(keys_.begin(), keys_.end(), [&](const Key& key) { return key.table == table; });
}

std::vector<std::string> Schema::names(const std::string& table) const {
  std::vector<std::string> out;
  for (const Key& key : keys_)
    if (key.table == table) out.push_back(key.name);
  return out;
}

std::vector<std::string> Schema::tables() const {
  std::vector<std::string> names;
  for (const Key& key : keys_)
    if (std::find(names.begin(), names.end(), key.table) == names.end()) names.push_back(key.table);
  return names;
}

namespace {

// The shortest decimal that reads back as x (0.1, not 0.10000000000000001).
std::string number_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return shortest_decimal(x);
}

// The value as a person wrote it, for messages.
std::string describe(const toml::node& v) {
  switch (v.type()) {
    case toml::node_type::string:
      return "the string '" + std::string(v.as_string()->get()) + "'";
    case toml::node_type::integer:
      return "the integer " + std::to_string(v.as_integer()->get());
    case toml::node_type::floating_point: {
      // 2.0 written as such: "the number 2" would read as a whole number the key accepts.
      const double x = v.as_floating_point()->get();
      const std::string text = number_text(x);
      const bool looks_whole = text.find_first_not_of("-0123456789") == std::string::npos;
      return "the number " + text + (looks_whole ? ".0" : "");
    }
    case toml::node_type::boolean:
      return v.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

std::string at_line(const std::string& path, const toml::source_region& where) {
  return path + ":" + std::to_string(where.begin.line);
}

// A whole number the key accepts, or an error.
std::int64_t whole(const Key& key, const toml::node& v, const std::string& where) {
  // The key's range is its option's (cli/options.cpp, Adder::integer); said as the option says it.
  const std::string range = std::to_string(key.low) + " to " + std::to_string(key.high);
  const auto* n = v.as_integer();
  if (n == nullptr) throw ConfigFileError(where + ": must be a whole number from " + range + ", not " + describe(v));
  if (n->get() < key.low || n->get() > key.high)
    throw ConfigFileError(where + ": must be a whole number from " + range + ", not '" + std::to_string(n->get()) +
                          "'");
  return n->get();
}

// "AxB" from [A, B], or the string as given (the option parses it).
std::string shape_words(const toml::node& v, const std::string& where) {
  if (const auto* s = v.as_string()) return s->get();
  const auto* a = v.as_array();
  const std::string why = ": must be a string \"AxB\" or an array [A, B] of two whole numbers above 0, not ";
  if (a == nullptr || a->size() != 2) throw ConfigFileError(where + why + describe(v));
  std::string text;
  for (const toml::node& part : *a) {
    const auto* n = part.as_integer();
    if (n == nullptr || n->get() < 1) throw ConfigFileError(where + why + "an array holding " + describe(part));
    text += (text.empty() ? "" : "x") + std::to_string(n->get());
  }
  return text;
}

std::vector<std::string> list_words(const toml::node& v, const std::string& where) {
  const auto word = [&](const toml::node& item) -> std::string {
    if (const auto* s = item.as_string()) return s->get();
    if (const auto* n = item.as_integer()) return std::to_string(n->get());
    throw ConfigFileError(where + ": must be an array of strings or whole numbers (or one string), not " +
                          (&item == &v ? describe(v) : "an array holding " + describe(item)));
  };
  const auto* a = v.as_array();
  if (a == nullptr) return {word(v)};
  std::vector<std::string> words;
  for (const toml::node& item : *a) words.push_back(word(item));
  return words;
}

// The words the key's option takes and the value for JSON; the type and range checked.
Setting typed(const Key& key, const toml::node& v, const std::string& where) {
  Setting s;
  s.key = &key;
  const std::string not_this = ", not " + describe(v);
  switch (key.kind) {
    case Kind::text: {
      const auto* str = v.as_string();
      if (str == nullptr) throw ConfigFileError(where + ": must be a string" + not_this);
      s.words = {str->get()};
      if (!key.choices.empty() && std::find(key.choices.begin(), key.choices.end(), s.words[0]) == key.choices.end()) {
        std::string names;
        for (const auto& c : key.choices) names += (names.empty() ? "" : ", ") + c;
        throw ConfigFileError(where + ": must be one of " + names + not_this);
      }
      s.value = s.words[0];
      break;
    }
    case Kind::integer:
    case Kind::count: {
      const std::int64_t n = whole(key, v, where);
      s.words = {std::to_string(n)};
      s.value = n;
      break;
    }
    case Kind::number:
      if (const auto* n = v.as_integer()) {
        s.words = {std::to_string(n->get())};
        s.value = n->get();
      } else if (const auto* x = v.as_floating_point()) {
        s.words = {number_text(x->get())};
        s.value = std::isfinite(x->get()) ? nlohmann::json(x->get()) : nlohmann::json(s.words[0]);
      } else {
        throw ConfigFileError(where + ": must be a finite number" + not_this);
      }
      break;
    case Kind::flag: {
      const auto* b = v.as_boolean();
      if (b == nullptr) throw ConfigFileError(where + ": must be true or false" + not_this);
      s.words = {b->get() ? "true" : "false"};
      s.value = b->get();
      break;
    }
    case Kind::shape:
      s.words = {shape_words(v, where)};
      s.value = s.words[0];
      break;
    case Kind::list:
      s.words = list_words(v, where);
      s.value = s.words;
      break;
  }
  return s;
}

// The option's own checks (ranges, choices, finite numbers) on each word, with the file's line.
void run_checks(const Key& key, const std::vector<std::string>& words, const std::string& where) {
  if (key.option == nullptr) return;
  for (int i = 0;; ++i) {
    CLI::Validator* check = nullptr;
    try {
      check = key.option->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return;
    }
    for (std::string word : words)
      if (const std::string why = (*check)(word); !why.empty()) throw ConfigFileError(where + ": " + why);
  }
}

// " (did you mean ...?)" for a key of another spelling or another table.
std::string hint(const Schema& schema, const std::string& table, const std::string& name) {
  if (const std::string near = closest_word(name, schema.names(table)); !near.empty())
    return " (did you mean '" + near + "'?)";
  for (const std::string& other : schema.tables())
    if (schema.find(other, name) != nullptr) return " ('" + name + "' is a key of [" + other + "])";
  return table == "slurm" ? " (see docs/configuration.md)" : " (see tessera " + table + " --help)";
}

// A file's errors: its line, and the message.
using Errors = std::vector<std::pair<std::int64_t, std::string>>;

// The notes of the files read (config_notes()).
std::vector<std::string>& notes() {
  static std::vector<std::string> all;
  return all;
}

// The key `name` of `table`; a key written with '_' for the schema's '-' (panel_width) is the
// schema's, with a note: the one spelling is the command line's, the other is read until the next
// release.
const Key* find_key(const Schema& schema, const std::string& table, const std::string& name, const std::string& where) {
  if (const Key* key = schema.find(table, name)) return key;
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  const Key* key = dashed == name ? nullptr : schema.find(table, dashed);
  if (key != nullptr)
    notes().push_back(where + ": read as '" + dashed + "', the option's spelling; '" + name +
                      "' is read until the next release");
  return key;
}

// The table's settings; each key's error is added to `errors` (every one of the file is reported).
std::vector<Setting> check_table(const std::string& path, const std::string& table, const toml::table& values,
                                 const Schema& schema, Errors& errors) {
  std::vector<Setting> settings;
  for (auto&& [name, value] : values) {
    const std::string key_name(name.str());
    const std::string where = at_line(path, value.source()) + ": " + table + "." + key_name;
    const Key* key = find_key(schema, table, key_name, where);
    if (key == nullptr) {
      errors.emplace_back(name.source().begin.line,
                          at_line(path, name.source()) + ": " + table + "." + key_name + ": unknown key" +
                              (table == "slurm" ? "" : ", not an option of `tessera " + table + "`") +
                              hint(schema, table, key_name));
      continue;
    }
    try {
      Setting s = typed(*key, value, where);
      run_checks(*key, s.words, where);
      s.line = value.source().begin.line;
      settings.push_back(std::move(s));
    } catch (const ConfigFileError& e) {
      errors.emplace_back(value.source().begin.line, e.what());
    }
  }
  return settings;
}

// The errors in the order of the file's lines (toml++ keeps a table's keys by name), one a line.
std::string join_lines(Errors errors) {
  std::stable_sort(errors.begin(), errors.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string text;
  for (const auto& e : errors) text += (text.empty() ? "" : "\n") + e.second;
  return text;
}

std::string table_list(const Schema& schema) {
  std::string names;
  for (const std::string& t : schema.tables()) names += (names.empty() ? "[" : ", [") + t + "]";
  return names;
}

}  // namespace

std::vector<Setting> parse_config(const std::string& text, const std::string& path, const Schema& schema) {
  toml::table root = parse_guarded(text, path);
  std::vector<Setting> settings;
  Errors errors;
  for (auto&& [name, value] : root) {
    const std::string table(name.str());
    if (!value.is_table()) {
      errors.emplace_back(name.source().begin.line,
                          at_line(path, name.source()) + ": " + table +
                              ": a key outside any table; put it under the table of its subcommand (" +
                              table_list(schema) + ")");
    } else if (!schema.has_table(table)) {
      errors.emplace_back(name.source().begin.line, at_line(path, name.source()) + ": [" + table +
                                                        "]: unknown table (the tables are " + table_list(schema) + ")");
    } else {
      for (Setting& s : check_table(path, table, *value.as_table(), schema, errors)) settings.push_back(std::move(s));
    }
  }
  if (!errors.empty()) throw ConfigFileError(join_lines(errors));
  std::stable_sort(settings.begin(), settings.end(),
                   [&](const Setting& x, const Setting& y) { return schema.index(x.key) < schema.index(y.key); });
  return settings;
}

std::vector<std::string> config_notes() {
  std::vector<std::string> out;
  out.swap(notes());
  return out;
}

void check_config_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if (const std::string kind = not_regular_file(st); !kind.empty())
    throw ConfigFileError(path + ": the config file is " + kind + ", not a regular file");
  if (st.st_size > kMaxConfigBytes)
    throw ConfigFileError(path + ": the config file is " + std::to_string(st.st_size) +
                          " bytes, more than a config file can be (" + std::to_string(kMaxConfigBytes) + ")");
}

std::string read_toml_text(const std::string& path, const std::string& what) {
  // Opened without blocking (a fifo would wait for a writer forever) and checked to be a regular
  // file of sane size before a byte is read (/dev/zero never ends).
  if (path.empty()) throw ConfigFileError(what + "'s name is empty ('')");
  SmallFile f = read_small_file(path, kMaxConfigBytes);
  if (f.error != 0) throw ConfigFileError(path + ": cannot read " + what + ": " + std::strerror(f.error));
  if (!f.not_regular.empty()) throw ConfigFileError(path + ": " + what + " is " + f.not_regular + ", not a regular file");
  if (f.too_large > 0)
    throw ConfigFileError(path + ": " + what + " is " + std::to_string(f.too_large) +
                          " bytes, more than a config file can be (" + std::to_string(kMaxConfigBytes) + ")");
  return std::move(f.text);
}

std::vector<Setting> read_config(const std::string& path, const Schema& schema) {
  const std::string text = read_toml_text(path, "the config file");
  return parse_config(text, path, schema);
}

std::string show_lines(const std::vector<Setting>& settings) {
  std::string out;
  for (const Setting& s : settings) {
    std::string value;
    for (const std::string& w : s.words) value += (value.empty() ? "" : ",") + w;
    if (value.find_first_of("\r\n") != std::string::npos)
      throw ConfigFileError("line " + std::to_string(s.line) + ": " + s.key->table + "." + s.key->name +
                            ": holds a line break, which one line cannot show: use `tessera config show --json`");
    out += s.key->table + "." + s.key->name + "=" + value + "\n";
  }
  return out;
}

nlohmann::json show_json(const std::vector<Setting>& settings) {
  nlohmann::json out = nlohmann::json::object();
  for (const Setting& s : settings) out[s.key->table][s.key->name] = s.value;
  return out;
}

std::vector<CLI::ConfigItem> TomlConfig::from_config(std::istream& input) const {
  const std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  const auto& given = option_->results();
  const std::string path = given.empty() ? std::string("the config file") : given.back();
  std::vector<CLI::ConfigItem> found;
  for (const Setting& s : parse_config(text, path, schema_)) {
    if (s.key->option == nullptr) continue;  // [slurm]: for the Slurm scripts
    CLI::ConfigItem item;
    item.parents = {s.key->table};
    item.name = s.key->name;
    item.inputs = s.words;
    found.push_back(std::move(item));
  }
  return found;
}

}  // namespace tessera::cli
