#pragma once
// The products of one launch (issue 42): `--a in.h5:/runs/*/A --b in.h5:/runs/*/B --c
// out.h5:/runs/*/C` is one product per group of /runs that holds an A, its B and its C named by
// the same words. Expanded once, on rank 0, before anything is read; the dry run lists them.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::job {

struct Product {
  Product() = default;
  Product(std::string a_, std::string b_, std::string c_) : a(std::move(a_)), b(std::move(b_)), c(std::move(c_)) {}

  std::string a, b, c;  // FILE:/DATASET each, as the options of one run take them
  // A manifest's values for this product; unset: the launch's (--transpose-a, --alpha, ...).
  std::optional<bool> transpose_a, transpose_b;
  std::optional<double> alpha, beta;
  std::optional<bool> conjugate_a, conjugate_b;  // complex data: op(X) = X^H
  std::optional<double> alpha_imag, beta_imag;   // complex data: the scalars' imaginary parts

  nlohmann::json to_json() const;
  static Product from_json(const nlohmann::json& j);
};

// The products `a`, `b` and `c` name. Without a wildcard in A: the one product (a, b, c) as
// given. With wildcards in A: every dataset they match, in name order; B either without a
// wildcard (one B for all) or with as many as A's, filled with A's words and required to exist;
// C with exactly as many as A's, filled the same way (C is written: it need not exist). Throws
// InputError naming the option: a pattern that matches nothing, a B missing for a match, C
// without A's wildcards (every product would write one C), wildcards in B or C but not in A.
std::vector<Product> expand_products(const std::string& a, const std::string& b, const std::string& c);

// The manifest's keys of a product, in the order docs/usage.md lists them: a, b, c (required),
// transpose-a, transpose-b, alpha, beta.
const std::vector<std::string>& manifest_keys();

}  // namespace tessera::job
