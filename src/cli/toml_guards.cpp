// The refusals that keep toml++ 3.3 from its assertions and undefined behaviour (toml_guards.hpp).
#include "cli/toml_guards.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "cli/config_toml.hpp"

namespace tessera::cli {

// toml++ 3.3 asserts (an assumption, where NDEBUG) that a table header's name starts with a key's
// character or a quote, instead of refusing `[ = 1` or `[]` (found by fuzz_options): such a line
// is refused here first. A line inside a multi-line array or string is taken as a header too,
// which only refuses nested arrays and such strings, of no key's kind.
void check_table_headers(const std::string& text, const std::string& path) {
  std::istringstream lines(text);
  std::string line;
  for (std::int64_t number = 1; std::getline(lines, line); ++number) {
    std::size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line[at] != '[') continue;
    at = line.find_first_not_of(" \t", line[at + 1] == '[' ? at + 2 : at + 1);
    const char first = at == std::string::npos ? '\0' : line[at];
    const bool key_start = std::isalnum(static_cast<unsigned char>(first)) || first == '_' || first == '-' ||
                           first == '"' || first == '\'';
    if (!key_start)
      throw ConfigFileError(path + ":" + std::to_string(number) +
                            ": not valid TOML: a table header [...] must start with the table's name");
  }
}

// toml++ 3.3 also reaches an "unreachable" point (undefined behaviour where NDEBUG) on a non-ASCII
// character (e.g. U+00A1-U+0499) in a bare key, a table name or a bare value (found by
// fuzz_options: `[x` + U+034D; `a=b'c` + U+01E4). TOML allows such characters only in strings and
// comments, so one elsewhere is refused here first. A quote opens a string only where one may
// start (after `=`, `[`, `,`, `{`, `.` or at a line's start), and a one-line string must close on
// its line; the scan follows basic and literal strings (one-line and multi-line) and comments.
void check_non_ascii(const std::string& text, const std::string& path) {
  enum class In { toml, comment, basic, literal, multi_basic, multi_literal } in = In::toml;
  std::int64_t line = 1;
  char before = '\n';        // the last character outside strings and blanks
  bool string_wide = false;  // the open one-line string holds a non-ASCII character
  const auto refuse = [&] {
    throw ConfigFileError(path + ":" + std::to_string(line) +
                          ": not valid TOML: a non-ASCII character outside a string or a comment "
                          "(keys and table names are ASCII; quote the value)");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool triple = text.compare(i, 3, std::string(3, c)) == 0;
    if (c == '\n') {
      if ((in == In::basic || in == In::literal) && string_wide) refuse();  // not closed on its line
      if (in == In::comment || in == In::basic || in == In::literal) in = In::toml;
      if (in == In::toml) before = '\n';
      ++line;
      continue;
    }
    switch (in) {
      case In::toml:
        if (static_cast<unsigned char>(c) >= 0x80) refuse();
        if (c == '#') in = In::comment;
        if ((c == '"' || c == '\'') && std::strchr("\n=[,{.", before) != nullptr) {
          in = triple ? (c == '"' ? In::multi_basic : In::multi_literal) : (c == '"' ? In::basic : In::literal);
          string_wide = false;
          if (triple) i += 2;
        } else if (c != ' ' && c != '\t') {
          before = c;
        }
        break;
      case In::basic:
      case In::multi_basic:
        string_wide = string_wide || static_cast<unsigned char>(c) >= 0x80;
        if (c == '\\') {  // an escape: the next character is the string's
          if (i + 1 < text.size() && text[++i] == '\n') ++line;
        } else if (c == '"' && (in == In::basic || triple)) {
          if (in == In::multi_basic) i += 2;
          in = In::toml, before = '"';
        }
        break;
      case In::literal:
      case In::multi_literal:
        string_wide = string_wide || static_cast<unsigned char>(c) >= 0x80;
        if (c == '\'' && (in == In::literal || triple)) {
          if (in == In::multi_literal) i += 2;
          in = In::toml, before = '\'';
        }
        break;
      case In::comment:
        break;
    }
  }
  if ((in == In::basic || in == In::literal || in == In::multi_basic || in == In::multi_literal) && string_wide)
    refuse();  // a string the file never closes
}

toml::table parse_guarded(const std::string& text, const std::string& path) {
  check_table_headers(text, path);
  check_non_ascii(text, path);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigFileError(path + ":" + std::to_string(e.source().begin.line) +
                          ": not valid TOML: " + std::string(e.description()));
  }
}

}  // namespace tessera::cli
