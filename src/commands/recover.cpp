#include "commands/recover.hpp"

#include <sys/stat.h>

#include <cstring>
#include <exception>

#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "io/journal.hpp"

namespace tessera::commands {

RecoverOutcome recover(const std::vector<std::string>& files, bool force) {
  RecoverOutcome out;
  for (const auto& file : files) {
    try {  // each file on its own: one refusal does not leave the next unrestored
      struct stat st {};
      if (::stat(file.c_str(), &st) == 0) {
        if (const std::string kind = not_regular_file(st); !kind.empty())
          throw InputError("'" + file + "' is " + kind + ", not a regular file; recover takes the files themselves");
      } else if (const int missing = errno; ::lstat(io::journal_path(file).c_str(), &st) != 0) {
        // (A journal whose file is gone is named by recover_interrupted_write.)
        throw InputError("'" + file + "': " + std::strerror(missing) + " (nothing to recover there)");
      }
      std::string note = io::recover_interrupted_write(file, force);
      out.lines.push_back(note.empty() ? "'" + file + "': no interrupted tessera write to undo" : std::move(note));
    } catch (const std::exception& e) {
      out.refusals.push_back(e.what());
    }
  }
  return out;
}

}  // namespace tessera::commands
