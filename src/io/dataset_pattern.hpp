#pragma once
// Datasets named by a pattern over the groups a file holds (issue 42: many products per launch):
// `in.h5:/runs/*/A` is every dataset A in a group of /runs, in name order. A level of the path
// that holds `*`, `?` or `[...]` is matched (fnmatch) against the names of the links in the level
// above; the others are taken as they are. What each wildcard level matched is kept, so that the
// product's other operands and its C are named by the same words (expand_like).
#include <string>
#include <vector>

#include "io/hdf5_io.hpp"

namespace tessera::io {

// One dataset a pattern matched, and the names its wildcard levels took (in path order).
struct PatternMatch {
  DatasetRef ref;
  std::vector<std::string> words;
};

// Whether `path` (a dataset path in a file) has a wildcard level.
bool has_wildcard(const std::string& path);
// The number of its wildcard levels.
int wildcard_levels(const std::string& path);

// Every dataset `pattern` names, in name order of each level; none when nothing matches (the
// caller says so: it knows which option it was). Links that do not resolve and objects that are
// not datasets at the last level (or not groups above it) are not matches. Throws InputError for
// a file that cannot be read (hdf5_io.hpp's reasons).
std::vector<PatternMatch> match_datasets(const DatasetRef& pattern);

// `pattern` with its wildcard levels replaced, in order, by `words` (as many as it has: throws
// std::invalid_argument otherwise).
DatasetRef expand_like(const DatasetRef& pattern, const std::vector<std::string>& words);

}  // namespace tessera::io
