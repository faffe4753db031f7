#pragma once
// What toml++ 3.3 must not be handed (found by fuzz_options): lines it would assert on or reach an
// "unreachable" point with, refused first with FILE:LINE (cli/config_toml.cpp calls these).
#include <toml++/toml.h>

#include <string>

namespace tessera::cli {

// A table header [...] that does not start with a key's character or a quote.
void check_table_headers(const std::string& text, const std::string& path);
// A non-ASCII character outside a string or a comment.
void check_non_ascii(const std::string& text, const std::string& path);
// Both checks, then toml++'s parse: the root table, or ConfigFileError "PATH:LINE: not valid TOML:
// ..." (the config file and the manifest read their text through this).
toml::table parse_guarded(const std::string& text, const std::string& path);

}  // namespace tessera::cli
