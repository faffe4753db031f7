#include "commands/recover.hpp"

#include "io/journal.hpp"

namespace tessera::commands {

std::vector<std::string> recover(const std::vector<std::string>& files) {
  std::vector<std::string> lines;
  for (const auto& file : files) {
    std::string note = io::recover_interrupted_write(file);
    lines.push_back(note.empty() ? "'" + file + "': no interrupted tessera write to undo" : std::move(note));
  }
  return lines;
}

}  // namespace tessera::commands
