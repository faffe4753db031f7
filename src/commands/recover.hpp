#pragma once
// `tessera recover FILE...`: restores each file from the journal that a tessera run which died
// while writing it left beside it (io/journal.hpp). Every other tessera command that touches
// such a file does the same first; this one does only that.
#include <string>
#include <vector>

namespace tessera::commands {

// One line per file for the user: what was restored, or that there was nothing to restore.
// Throws InputError when a file is held by a live run or its journal no longer matches it.
std::vector<std::string> recover(const std::vector<std::string>& files);

}  // namespace tessera::commands
