#include "io/dataset_pattern.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "io/hdf5_library.hpp"
#include "io/hdf5_open.hpp"

namespace tessera::io {

namespace {

std::vector<std::string> levels_of(const std::string& path) {
  std::vector<std::string> levels;
  for (std::size_t pos = 0; pos <= path.size();) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) levels.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return levels;
}

bool is_wildcard(const std::string& level) { return level.find_first_of("*?[") != std::string::npos; }

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

// The kind of object at `path` below `file`: H5I_GROUP, H5I_DATASET, or H5I_BADID where the link
// is missing, dangling or external into a file that cannot be opened.
H5I_type_t kind_at(hid_t file, const std::string& path) {
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  const hid_t object = H5Oopen(file, path.c_str(), H5P_DEFAULT);
  if (object < 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  const H5I_type_t kind = H5Iget_type(object);
  H5Oclose(object);
  return kind;
}

void walk(hid_t file, const std::vector<std::string>& levels, std::size_t at, const std::string& prefix,
          std::vector<std::string>& words, const DatasetRef& pattern, std::vector<PatternMatch>& out) {
  const bool last = at + 1 == levels.size();
  std::vector<std::string> names;
  if (is_wildcard(levels[at])) {
    const hid_t group = H5Oopen(file, prefix.empty() ? "/" : prefix.c_str(), H5P_DEFAULT);
    if (group < 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    hsize_t idx = 0;
    const herr_t rc = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &names);
    H5Oclose(group);
    if (rc < 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    names.erase(std::remove_if(names.begin(), names.end(),
                               [&](const std::string& n) { return fnmatch(levels[at].c_str(), n.c_str(), 0) != 0; }),
                names.end());
  } else {
    names.push_back(levels[at]);
  }
  for (const std::string& name : names) {
    const std::string path = prefix + "/" + name;
    const H5I_type_t kind = kind_at(file, path);
    if (is_wildcard(levels[at])) words.push_back(name);
    if (last && kind == H5I_DATASET) out.push_back({DatasetRef{pattern.file, path, pattern.slice}, words});
    if (!last && kind == H5I_GROUP) walk(file, levels, at + 1, path, words, pattern, out);
    if (is_wildcard(levels[at])) words.pop_back();
  }
}

}  // namespace

bool has_wildcard(const std::string& path) { return wildcard_levels(path) > 0; }

int wildcard_levels(const std::string& path) {
  const auto levels = levels_of(path);
  return static_cast<int>(std::count_if(levels.begin(), levels.end(), is_wildcard));
}

std::vector<PatternMatch> match_datasets(const DatasetRef& pattern) {
  const auto levels = levels_of(pattern.path);
  std::vector<PatternMatch> out;
  if (levels.empty()) return out;
  const std::lock_guard<std::mutex> hold(hdf5::lock());
  const Handle file = hdf5::open_file_readonly(pattern.file);
  std::vector<std::string> words;
  walk(file.get(), levels, 0, "", words, pattern, out);
  return out;
}

DatasetRef expand_like(const DatasetRef& pattern, const std::vector<std::string>& words) {
  const auto levels = levels_of(pattern.path);
  std::string path;
  std::size_t used = 0;
  for (const std::string& level : levels) {
    if (is_wildcard(level)) {
      if (used == words.size()) throw std::invalid_argument("expand_like: more wildcards than words");
      path += "/" + words[used++];
    } else {
      path += "/" + level;
    }
  }
  if (used != words.size()) throw std::invalid_argument("expand_like: more words than wildcards");
  return DatasetRef{pattern.file, path, pattern.slice};
}

}  // namespace tessera::io
