#include "io/path_rule.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "io/data_sources.hpp"
#include "io/hdf5_io.hpp"
#include "io/journal.hpp"

namespace tessera::io {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

}  // namespace

void refuse_pending_journal(const std::string& file, const std::string& what) {
  const std::string jpath = pending_journal(file);
  if (jpath.empty()) return;
  throw InputError(in_quotes(file) + " (" + what + ") has a pending journal, " + in_quotes(jpath) +
                   ", left by a tessera run that died while writing the file: tessera does not read a file that "
                   "may be half-written, and never writes a file it only reads. Run `tessera recover " +
                   file + "` to put it back as it was before that run");
}

void guard_input(GuardedPaths& g, const DatasetRef& ref, const std::string& role) {
  refuse_pending_journal(ref.file, role);
  DataSources sources = locate_data(ref, role);
  for (const auto& file : sources.files)
    if (file != ref.file) refuse_pending_journal(file, "where " + role + " " + in_quotes(ref.str()) + " has its data");
  g.guard.read(ref.file, role + " " + in_quotes(ref.str()));
  for (const auto& file : sources.files)
    if (file != ref.file)
      g.guard.read(file, role + " " + in_quotes(ref.str()) + " reads its data from " + in_quotes(file));
  for (auto& note : sources.notes) g.notes.push_back(std::move(note));
}

void recover_before_use(GuardedPaths& g, const std::string& file) {
  std::string note = recover_interrupted_write(file);
  if (!note.empty()) g.notes.push_back(std::move(note));
}

void guard_config(PathGuard& guard, const std::string& config) {
  if (!config.empty()) guard.read(config, "the config file " + in_quotes(config));
}

bool read_small_file(const std::string& path, std::string& text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (std::int64_t{1} << 30)) return false;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  text = all.str();
  return static_cast<bool>(in);
}

bool json_file_of(const std::string& path, const std::function<bool(const nlohmann::json&)>& match) {
  std::string text;
  if (!read_small_file(path, text)) return false;
  if (text.empty()) return true;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return false;  // not JSON at all (e.g. HDF5): no need to parse
  const auto j = nlohmann::json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object() && match(j);
}

}  // namespace tessera::io
