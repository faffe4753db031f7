#include "cli/manifest_toml.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "cli/config_toml.hpp"
#include "cli/toml_guards.hpp"
#include "core/words.hpp"

namespace tessera::cli {

namespace {

std::string at(const std::string& path, const toml::source_region& where) {
  return path + ":" + std::to_string(where.begin.line);
}

// One [[product]] table; its errors added to `errors`.
job::Product product_of(const toml::table& t, const std::string& path, int index, std::vector<std::string>& errors) {
  job::Product p;
  const std::string name = "product " + std::to_string(index);
  for (auto&& [key, value] : t) {
    const std::string k(key.str());
    const std::string where = at(path, key.source()) + ": " + name + "." + k;
    const auto& keys = job::manifest_keys();
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      errors.push_back(where + ": " + not_one_of(k, keys));
    } else if (k == "a" || k == "b" || k == "c") {
      if (!value.is_string())
        errors.push_back(where + ": expected FILE:/DATASET as a string");
      else
        (k == "a" ? p.a : k == "b" ? p.b : p.c) = value.as_string()->get();
    } else if (k == "transpose-a" || k == "transpose-b" || k == "conjugate-a" || k == "conjugate-b") {
      if (!value.is_boolean())
        errors.push_back(where + ": expected true or false");
      else
        (k == "transpose-a"   ? p.transpose_a
         : k == "transpose-b" ? p.transpose_b
         : k == "conjugate-a" ? p.conjugate_a
                              : p.conjugate_b) = value.as_boolean()->get();
    } else {
      const auto number = value.value<double>();
      if (!number || !std::isfinite(*number))
        errors.push_back(where + ": expected a finite number");
      else
        (k == "alpha" ? p.alpha : k == "beta" ? p.beta : k == "alpha-imag" ? p.alpha_imag : p.beta_imag) = *number;
    }
  }
  for (const auto& [k, v] : {std::pair{"a", &p.a}, {"b", &p.b}, {"c", &p.c}})
    if (v->empty()) errors.push_back(at(path, t.source()) + ": " + name + ": '" + k + "' is missing (FILE:/DATASET)");
  return p;
}

}  // namespace

std::vector<job::Product> read_manifest(const std::string& path) {
  const std::string text = read_toml_text(path, "the manifest");
  toml::table root = parse_guarded(text, path);
  std::vector<std::string> errors;
  std::vector<job::Product> products;
  for (auto&& [key, value] : root) {
    const std::string k(key.str());
    const toml::array* list = value.as_array();
    if (k != "product" || list == nullptr || !list->is_array_of_tables()) {
      errors.push_back(at(path, key.source()) + ": '" + k +
                       "': a manifest holds [[product]] tables only (a, b, c; transpose-a, transpose-b, alpha, beta; "
                       "conjugate-a, conjugate-b, alpha-imag, beta-imag)");
      continue;
    }
    for (const toml::node& node : *list)
      products.push_back(product_of(*node.as_table(), path, static_cast<int>(products.size()) + 1, errors));
  }
  if (errors.empty() && products.empty()) errors.push_back(path + ": the manifest lists no [[product]]");
  if (!errors.empty()) {  // in the order of the file's lines (toml++ keeps a table's keys sorted)
    const auto line = [&](const std::string& e) { return std::atol(e.c_str() + path.size() + 1); };
    std::stable_sort(errors.begin(), errors.end(),
                     [&](const std::string& x, const std::string& y) { return line(x) < line(y); });
    throw ConfigFileError(join_words(errors, "\n"));
  }
  return products;
}

}  // namespace tessera::cli
