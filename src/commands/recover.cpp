#include "commands/recover.hpp"

#include <sys/stat.h>

#include <cstring>
#include <exception>

#include "core/error.hpp"
#include "io/journal.hpp"

namespace tessera::commands {

RecoverOutcome recover(const std::vector<std::string>& files) {
  RecoverOutcome out;
  for (const auto& file : files) {
    try {  // each file on its own: one refusal does not leave the next unrestored
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0 && ::lstat(io::journal_path(file).c_str(), &st) != 0)
        throw InputError("'" + file + "': " + std::strerror(errno) + " (nothing to recover there)");
      if (S_ISDIR(st.st_mode)) throw InputError("'" + file + "' is a directory; recover takes the files themselves");
      std::string note = io::recover_interrupted_write(file);
      out.lines.push_back(note.empty() ? "'" + file + "': no interrupted tessera write to undo" : std::move(note));
    } catch (const std::exception& e) {
      out.refusals.push_back(e.what());
    }
  }
  return out;
}

}  // namespace tessera::commands
