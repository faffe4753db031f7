#pragma once
// `tessera run --manifest FILE` (docs/usage.md, "Many products in one launch"): the products of a
// launch as TOML [[product]] tables, read by every rank as a config file is.
#include <string>
#include <vector>

#include "job/products.hpp"

namespace tessera::cli {

// The products of the manifest at `path`, in its order. Throws ConfigFileError (exit 2) holding
// every error of the file, one a line with FILE:LINE: a key that is none of a product's (with the
// closest), a value of the wrong type, a missing a, b or c, anything besides [[product]] tables.
std::vector<job::Product> read_manifest(const std::string& path);

}  // namespace tessera::cli
