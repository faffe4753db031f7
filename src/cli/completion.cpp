// `tessera config completion`: the bash completion script, written from the command line itself
// (completion.hpp): each command's options and the words of each option that takes one of a few,
// as --help-json describes them (the kernels from the registries, the algorithms from theirs).
#include "cli/completion.hpp"

#include <string>
#include <vector>

#include "cli/help_json.hpp"

namespace tessera::cli {
namespace {

// The fixed part: which command the words so far name, then the values of the option before the
// cursor, a file for an option that takes anything, else the command's options and subcommands.
const char* const kDriver = R"bash(
_tessera() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local sub="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ "$word" == -* ]]; then
      _tessera_takes_value "$sub" "$word" && ((i++))
    elif [[ " $(_tessera_subcommands "$sub") " == *" $word "* ]]; then
      sub=$word
    fi
  done
  if [[ "$prev" == -* ]] && _tessera_takes_value "$sub" "$prev"; then
    local values
    values=$(_tessera_values "$sub" "$prev")
    if [ -n "$values" ]; then
      # A list option (bench --kernels a,b): the words after the last comma.
      local head=""
      [[ "$cur" == *,* ]] && head=${cur%,*},
      mapfile -t COMPREPLY < <(compgen -P "$head" -W "$values" -- "${cur##*,}")
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
  fi
  if [[ "$cur" == -* || -n "$(_tessera_subcommands "$sub")" ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_tessera_options "$sub") $(_tessera_subcommands "$sub")" -- "$cur")
  else
    # recover's files, config show's file: file names.
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -o filenames -F _tessera tessera
)bash";

// Every command, each before its subcommands.
std::vector<CLI::App*> commands_of(CLI::App& app) {
  std::vector<CLI::App*> all{&app};
  for (std::size_t i = 0; i < all.size(); ++i)
    for (CLI::App* sub : all[i]->get_subcommands([](CLI::App*) { return true; })) all.push_back(sub);
  return all;
}

// A command's key in the script: its name ("" for tessera itself); the names are unique.
std::string key_of(const CLI::App& command) { return command.get_parent() == nullptr ? "" : command.get_name(); }

std::string words_of(const nlohmann::json& list) {
  std::string text;
  for (const auto& w : list) text += (text.empty() ? "" : " ") + w.get<std::string>();
  return text;
}

}  // namespace

std::string bash_completion(CLI::App& app) {
  std::string options, subcommands, takes_value, values;
  for (CLI::App* command : commands_of(app)) {
    const nlohmann::json doc = describe_command(*command);
    const std::string key = key_of(*command);
    // --help-all is the program's, listed in every command's --help too.
    std::string flags =
        "-h --help --help-all --help-json" + std::string(command->get_parent() == nullptr ? " --version" : "");
    for (const nlohmann::json* list : {&doc["options"], &doc["inherited"]})
      for (const auto& opt : *list) {
        if (opt["positional"].get<bool>()) continue;
        flags += " " + words_of(opt["flags"]);
        if (!opt["takes_value"].get<bool>()) continue;
        for (const auto& flag : opt["flags"]) {
          const std::string pattern = "\"" + key + " " + flag.get<std::string>() + "\"";
          takes_value += takes_value.empty() ? pattern : " | " + pattern;
          if (opt["allowed"].is_array())
            values += "    " + pattern + ") echo \"" + words_of(opt["allowed"]) + "\" ;;\n";
        }
      }
    options += "    \"" + key + "\") echo \"" + flags + "\" ;;\n";
    if (!doc["subcommands"].empty())
      subcommands += "    \"" + key + "\") echo \"" + words_of(doc["subcommands"]) + "\" ;;\n";
  }
  return "# bash completion for tessera, written by `tessera config completion` from tessera's own options\n"
         "# (at build time, as the man page is: build/completion/tessera; installed as\n"
         "# share/bash-completion/completions/tessera). Test: cli.completion (tests/scripts/cli_common.py).\n\n"
         "_tessera_options() {\n  case \"$1\" in\n" +
         options + "  esac\n}\n\n_tessera_subcommands() {\n  case \"$1\" in\n" + subcommands +
         "  esac\n}\n\n_tessera_takes_value() {\n  case \"$1 $2\" in\n    " + takes_value +
         ") return 0 ;;\n  esac\n  return 1\n}\n\n# The words an option's value may be (\"\": a file, or anything).\n"
         "_tessera_values() {\n  case \"$1 $2\" in\n" +
         values + "  esac\n}\n" + kDriver;
}

}  // namespace tessera::cli
