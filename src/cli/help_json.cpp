// `tessera <command> --help-json`: CLI11's options of a command as JSON (help_json.hpp).
#include "help_json.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/version.hpp"

namespace tessera::cli {
namespace {

using nlohmann::json;

// The value type of an option, from CLI11's type name (TEXT, INT, UINT, FLOAT, BOOLEAN, ...) and
// its arity: a flag takes no value; a flag given a callback that counts (-vv) is a count.
enum class ValueType { string, integer, number, boolean, count };

const char* type_name(ValueType t) {
  static const char* const kNames[] = {"string", "integer", "number", "boolean", "count"};  // ValueType's order
  return kNames[static_cast<int>(t)];
}

bool is_flag(const CLI::Option& opt) { return !opt.get_positional() && opt.get_items_expected_max() == 0; }

ValueType value_type(const CLI::Option& opt, const std::string& cli_type) {
  if (is_flag(opt)) {
    // A flag that keeps one of its occurrences is a switch; one that keeps them all (TakeAll in
    // CLI11 2.1, a sum in later versions) counts them.
    const CLI::MultiOptionPolicy p = opt.get_multi_option_policy();
    const bool one = p == CLI::MultiOptionPolicy::TakeLast || p == CLI::MultiOptionPolicy::TakeFirst ||
                     p == CLI::MultiOptionPolicy::Throw;
    return one ? ValueType::boolean : ValueType::count;
  }
  if (cli_type == "INT" || cli_type == "UINT") return ValueType::integer;
  if (cli_type == "FLOAT") return ValueType::number;
  if (cli_type == "BOOLEAN") return ValueType::boolean;
  return ValueType::string;
}

// A number as JSON: an integer where the option's type is one and the text is whole.
json number_json(const std::string& text, ValueType t) {
  char* end = nullptr;
  if (t == ValueType::integer || t == ValueType::count) {
    // Past 2^63 - 1 (a seed's 2^64 - 1) as an unsigned number, never clamped.
    errno = 0;
    if (!text.empty() && text[0] != '-') {
      const unsigned long long whole = std::strtoull(text.c_str(), &end, 10);
      if (end != text.c_str() && *end == '\0' && errno == 0) return whole;
    } else {
      const long long whole = std::strtoll(text.c_str(), &end, 10);
      if (end != text.c_str() && *end == '\0' && errno == 0) return whole;
    }
  }
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return x;
  return nullptr;
}

// What the validators say of the values an option takes: CLI11's IsMember ("{a,b,c}"), Range
// ("INT in [1 - 8]", POSITIVE, NONNEGATIVE), Bound ("... bounded to [a - b]") and tessera's
// own checks written as a comparison ("RANKS >= 1", "> 0"). Anything else is only listed.
struct Limits {
  std::vector<std::string> allowed;
  json minimum = nullptr, maximum = nullptr;
  bool minimum_exclusive = false, maximum_exclusive = false;
};

void split_set(const std::string& text, std::vector<std::string>& out) {
  std::string item;
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == ',') {
      out.push_back(item);
      item.clear();
    } else {
      item += text[i];
    }
  }
  out.push_back(item);
}

void read_validator(const std::string& text, ValueType t, Limits& l) {
  static const std::regex interval(R"((?:in|bounded to) \[(\S+) - (\S+)\]$)");
  static const std::regex compare(R"((?:^|\s)(>=|>|<=|<)\s*(\S+)$)");
  std::smatch m;
  if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
    split_set(text, l.allowed);
  } else if (text == "POSITIVE" || text == "NONNEGATIVE") {
    l.minimum = t == ValueType::integer ? json(text == "POSITIVE" ? 1 : 0) : json(0);
    l.minimum_exclusive = text == "POSITIVE" && t != ValueType::integer;
  } else if (std::regex_search(text, m, interval)) {
    l.minimum = number_json(m[1], t);
    l.maximum = number_json(m[2], t);
  } else if (std::regex_search(text, m, compare)) {
    const std::string op = m[1];
    const json bound = number_json(m[2], t);
    if (op[0] == '>') {
      l.minimum = bound;
      l.minimum_exclusive = op == ">";
    } else {
      l.maximum = bound;
      l.maximum_exclusive = op == "<";
    }
  }
}

// The validators' descriptions, in the order CLI11 holds them (get_validator(index) throws past
// the last).
std::vector<std::string> validator_texts(CLI::Option& opt) {
  std::vector<std::string> texts;
  for (int i = 0;; ++i) {
    try {
      const std::string text = opt.get_validator(i)->get_description();
      if (!text.empty()) texts.push_back(text);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  return texts;
}

json default_json(const CLI::Option& opt, ValueType t) {
  const std::string text = opt.get_default_str();
  if (t == ValueType::boolean && is_flag(opt)) return text == "true" || text == "1";
  if (t == ValueType::count) return text.empty() ? json(0) : number_json(text, t);
  if (text.empty()) return nullptr;
  if (t == ValueType::boolean) return text == "true" || text == "1";
  if (t == ValueType::integer || t == ValueType::number) {
    json x = number_json(text, t);
    return x.is_null() ? json(text) : x;
  }
  return text;
}

json describe_option(CLI::Option& opt) {
  const std::string cli_type = opt.get_type_name().substr(0, opt.get_type_name().find(':'));
  const ValueType t = value_type(opt, cli_type);
  const bool positional = opt.get_lnames().empty() && opt.get_snames().empty();
  json flags = json::array();
  for (const auto& n : opt.get_lnames()) flags.push_back("--" + n);
  for (const auto& n : opt.get_snames()) flags.push_back("-" + n);
  const std::string name = !opt.get_lnames().empty()   ? opt.get_lnames().front()
                           : !opt.get_snames().empty() ? opt.get_snames().front()
                                                       : opt.get_name();
  Limits limits;
  const std::vector<std::string> checks = validator_texts(opt);
  for (const auto& text : checks) read_validator(text, t, limits);
  if (cli_type == "UINT" && limits.minimum.is_null()) limits.minimum = 0;
  json o = {{"name", name},
            {"flags", flags},
            {"positional", positional},
            {"type", type_name(t)},
            {"takes_value", !is_flag(opt)},
            {"list", !is_flag(opt) && opt.get_items_expected_max() > 1},
            {"required", opt.get_required()},
            {"default", default_json(opt, t)},
            {"allowed", limits.allowed.empty() ? json(nullptr) : json(limits.allowed)},
            {"minimum", limits.minimum},
            {"minimum_exclusive", limits.minimum_exclusive},
            {"maximum", limits.maximum},
            {"maximum_exclusive", limits.maximum_exclusive},
            {"cli_type", opt.get_type_name()},
            {"checks", checks},
            {"help", opt.get_description()}};
  if (o["list"] && opt.get_delimiter() != '\0') o["delimiter"] = std::string(1, opt.get_delimiter());
  return o;
}

bool internal(const CLI::Option* opt) {
  const std::string name = opt->get_single_name();
  return name == "help" || name == "help-all" || name == "help-json" || name == "version";
}

json describe_options(CLI::App& app) {
  json list = json::array();
  for (CLI::Option* opt : app.get_options([](CLI::Option* o) { return !internal(o); }))
    list.push_back(describe_option(*opt));
  return list;
}

// The command as typed after `tessera`: "run", "config show"; "" for tessera itself.
std::string command_path(const CLI::App& command) {
  std::string path;
  for (const CLI::App* c = &command; c->get_parent() != nullptr; c = c->get_parent())
    path = c->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

}  // namespace

json describe_command(CLI::App& command) {
  json doc = {{"schema", "tessera.options/1"},
              {"program", "tessera"},
              {"version", kVersion},
              {"command", command_path(command)},
              {"description", command.get_description()},
              {"options", describe_options(command)},
              {"inherited", json::array()},
              {"subcommands", json::array()}};
  // A subcommand that falls through (run: --config) also takes its parent's options.
  if (command.get_parent() != nullptr && command.get_fallthrough())
    doc["inherited"] = describe_options(*command.get_parent());
  for (const CLI::App* sub : command.get_subcommands([](CLI::App*) { return true; }))
    doc["subcommands"].push_back(sub->get_name());
  return doc;
}

void add_help_json(CLI::App& app, bool print) {
  // Every command at every depth (`tessera config show` too), each before its subcommands.
  std::vector<CLI::App*> commands{&app};
  for (std::size_t i = 0; i < commands.size(); ++i)
    for (CLI::App* sub : commands[i]->get_subcommands([](CLI::App*) { return true; })) commands.push_back(sub);
  for (CLI::App* command : commands) {
    command
        ->add_flag_callback(
            "--help-json",
            [command, print] {
              if (print) std::fputs((describe_command(*command).dump(2) + "\n").c_str(), stdout);
              throw CLI::Success();
            },
            "print this command's options as JSON (name, type, default, allowed values, range, help) and exit")
        // At once, as --help: before the required options are checked, before any config file.
        ->trigger_on_parse();
  }
}

}  // namespace tessera::cli
