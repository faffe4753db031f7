#pragma once
// `tessera recover FILE...`: restores each file from the journal that a tessera run which died
// while writing it left beside it (io/journal.hpp). Every other tessera command that touches
// such a file does the same first; this one does only that.
#include <string>
#include <vector>

namespace tessera::commands {

// Each file in turn, whatever became of the others: `lines` says for each recovered one what was
// restored, or that there was nothing to restore; `refusals` why a file was not (missing, a
// directory, held by a live run, a journal that does not match it or is not provably its own).
struct RecoverOutcome {
  std::vector<std::string> lines, refusals;
};
// `force`: restore a file even where it was changed after the run died (io::recover_interrupted_write).
RecoverOutcome recover(const std::vector<std::string>& files, bool force = false);

}  // namespace tessera::commands
