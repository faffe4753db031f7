#include "job/products.hpp"

#include "core/error.hpp"
#include "io/dataset_pattern.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::job {

namespace {

std::string count_text(int n) { return std::to_string(n) + (n == 1 ? " wildcard level" : " wildcard levels"); }

}  // namespace

nlohmann::json Product::to_json() const {
  nlohmann::json j = {{"a", a}, {"b", b}, {"c", c}};
  if (transpose_a) j["transpose-a"] = *transpose_a;
  if (transpose_b) j["transpose-b"] = *transpose_b;
  if (alpha) j["alpha"] = *alpha;
  if (beta) j["beta"] = *beta;
  if (conjugate_a) j["conjugate-a"] = *conjugate_a;
  if (conjugate_b) j["conjugate-b"] = *conjugate_b;
  if (alpha_imag) j["alpha-imag"] = *alpha_imag;
  if (beta_imag) j["beta-imag"] = *beta_imag;
  return j;
}

Product Product::from_json(const nlohmann::json& j) {
  Product p{j.at("a").get<std::string>(), j.at("b").get<std::string>(), j.at("c").get<std::string>()};
  if (j.contains("transpose-a")) p.transpose_a = j["transpose-a"].get<bool>();
  if (j.contains("transpose-b")) p.transpose_b = j["transpose-b"].get<bool>();
  if (j.contains("alpha")) p.alpha = j["alpha"].get<double>();
  if (j.contains("beta")) p.beta = j["beta"].get<double>();
  if (j.contains("conjugate-a")) p.conjugate_a = j["conjugate-a"].get<bool>();
  if (j.contains("conjugate-b")) p.conjugate_b = j["conjugate-b"].get<bool>();
  if (j.contains("alpha-imag")) p.alpha_imag = j["alpha-imag"].get<double>();
  if (j.contains("beta-imag")) p.beta_imag = j["beta-imag"].get<double>();
  return p;
}

const std::vector<std::string>& manifest_keys() {
  static const std::vector<std::string> keys = {"a",           "b",          "c",        "transpose-a",
                                                "transpose-b", "alpha",      "beta",     "conjugate-a",
                                                "conjugate-b", "alpha-imag", "beta-imag"};
  return keys;
}

std::vector<Product> expand_products(const std::string& a, const std::string& b, const std::string& c) {
  const io::DatasetRef ra = io::DatasetRef::parse(a), rb = io::DatasetRef::parse(b), rc = io::DatasetRef::parse(c);
  const int wa = io::wildcard_levels(ra.path), wb = io::wildcard_levels(rb.path), wc = io::wildcard_levels(rc.path);
  if (wa == 0) {
    if (wb > 0 || wc > 0)
      throw InputError(std::string(wb > 0 ? "--b" : "--c") + " '" + (wb > 0 ? b : c) +
                       "' has a wildcard but --a names one dataset: the products are the datasets --a matches "
                       "(e.g. --a FILE:/runs/*/A)");
    return {Product{a, b, c}};
  }
  if (wb != 0 && wb != wa)
    throw InputError("--b '" + b + "' has " + count_text(wb) + " and --a '" + a + "' " + count_text(wa) +
                     ": B is one dataset for every product, or named by A's words");
  if (wc != wa)
    throw InputError("--c '" + c + "' has " + count_text(wc) + " and --a '" + a + "' " + count_text(wa) +
                     ": each product's C is named by its A's words (e.g. --c out.h5:/runs/*/C)");
  const std::vector<io::PatternMatch> matches = io::match_datasets(ra);
  if (matches.empty()) throw InputError("--a '" + a + "' matches no dataset in '" + ra.file + "'");
  std::vector<Product> products;
  products.reserve(matches.size());
  for (const io::PatternMatch& m : matches) {
    const io::DatasetRef mb = wb == 0 ? rb : io::expand_like(rb, m.words);
    if (wb != 0 && io::match_datasets(mb).empty())
      throw InputError("--b '" + b + "': '" + mb.str() + "' (for '" + m.ref.str() + "') is not a dataset");
    products.push_back(Product{m.ref.text(), mb.text(), io::expand_like(rc, m.words).text()});
  }
  return products;
}

}  // namespace tessera::job
