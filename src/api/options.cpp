// tessera::Options (include/tessera/tessera.hpp): the options of `tessera run` behind one pointer,
// set by typed setters or by their command-line names: both through the table of run options
// (job/run_options.hpp), so that set(), get(), names() and the setters agree with the command line.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "access.hpp"
#include "core/words.hpp"
#include "job/run_options.hpp"

namespace tessera {

namespace {

// The row of `option` (the table's spelling, or panel_width for panel-width); std::invalid_argument
// for none. log-level is the call's, not the run's: handled by the callers.
const job::RunOption& row_of(const std::string& option) {
  const job::RunOption* row = job::find_run_option(option);
  if (row == nullptr || !row->in_library)
    throw std::invalid_argument("tessera::Options: no option '" + option + "' (tessera run --help)");
  return *row;
}

// The shortest decimal that reads back as x ("2.5", "1", "0.1", "100000").
std::string number_text(double x) { return shortest_decimal(x, 6); }

}  // namespace

Options::Options() : impl_(std::make_unique<Impl>()) {}
Options::Options(const Options& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Options::Options(Options&& other) noexcept : impl_(std::make_unique<Impl>()) { impl_.swap(other.impl_); }
Options& Options::operator=(const Options& other) {
  if (this != &other) *impl_ = *other.impl_;
  return *this;
}
Options& Options::operator=(Options&& other) noexcept {
  impl_.swap(other.impl_);
  return *this;
}
Options::~Options() = default;

// Each typed setter is the row's set() (one check and conversion: job/run_options.hpp).
Options& Options::a(const std::string& v) { return set("a", v); }
Options& Options::b(const std::string& v) { return set("b", v); }
Options& Options::c(const std::string& v) { return set("c", v); }
Options& Options::transpose_a(bool on) { return set("transpose-a", on ? "true" : "false"); }
Options& Options::transpose_b(bool on) { return set("transpose-b", on ? "true" : "false"); }
Options& Options::alpha(double v) { return set("alpha", number_text(v)); }
Options& Options::beta(double v) { return set("beta", number_text(v)); }
Options& Options::alpha(std::complex<double> v) {
  return set("alpha", number_text(v.real())).set("alpha-imag", number_text(v.imag()));
}
Options& Options::beta(std::complex<double> v) {
  return set("beta", number_text(v.real())).set("beta-imag", number_text(v.imag()));
}
Options& Options::conjugate_a(bool on) { return set("conjugate-a", on ? "true" : "false"); }
Options& Options::conjugate_b(bool on) { return set("conjugate-b", on ? "true" : "false"); }
Options& Options::backend(const std::string& v) { return set("backend", v); }
Options& Options::kernel(const std::string& v) { return set("kernel", v); }
Options& Options::dtype(const std::string& v) { return set("dtype", v); }
Options& Options::algorithm(const std::string& v) { return set("algorithm", v); }
Options& Options::comm(const std::string& v) { return set("comm", v); }
Options& Options::grid(const std::string& v) { return set("grid", v == "auto" ? "" : v); }
Options& Options::panel_width(std::int64_t v) { return set("panel-width", std::to_string(v)); }
Options& Options::gpu_memory(const std::string& v) { return set("gpu-memory", v); }
Options& Options::write(const std::string& v) { return set("write", v); }
Options& Options::machine(const std::string& v) { return set("machine", v); }
Options& Options::baseline(const std::string& v) { return set("baseline", v); }
Options& Options::overwrite(bool on) { return set("overwrite", on ? "true" : "false"); }
Options& Options::verify(bool on) { return set("verify", on ? "true" : "false"); }
Options& Options::allow_nonfinite(bool on) { return set("allow-nonfinite", on ? "true" : "false"); }
Options& Options::fail_on_nonfinite(bool on) { return set("fail-on-nonfinite", on ? "true" : "false"); }
Options& Options::report(const std::string& v) { return set("report", v); }
Options& Options::quiet(bool on) { return set("quiet", on ? "true" : "false"); }
Options& Options::progress(const std::string& v) { return set("progress", v); }
Options& Options::log_level(const std::string& v) { return set("log-level", v); }
Options& Options::repeat(int v) { return set("repeat", std::to_string(v)); }
Options& Options::warmup(int v) { return set("warmup", std::to_string(v)); }
Options& Options::timeout(int v) { return set("timeout", std::to_string(v)); }
Options& Options::ranks(int v) { return set("ranks", std::to_string(v)); }
Options& Options::ranks_per_node(int v) { return set("ranks-per-node", std::to_string(v)); }

Options& Options::shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  return set("m", std::to_string(m)).set("n", std::to_string(n)).set("k", std::to_string(k));
}

Options& Options::set(const std::string& option, const std::string& value) {
  if (option == "log-level") {
    impl_->log_level = value;
    impl_->give(option);
    return *this;
  }
  const job::RunOption& row = row_of(option);
  try {
    job::set_value(impl_->run, row, value);
  } catch (const job::OptionError& e) {
    throw std::invalid_argument(std::string("tessera::Options: ") + e.what());
  }
  impl_->give(row.name);
  if (row.name == "alpha") impl_->run.alpha_imag = 0;  // a real alpha; alpha(complex) sets its part after
  if (row.name == "beta") impl_->run.beta_imag = 0;
  return *this;
}

std::string Options::get(const std::string& option) const {
  if (option == "log-level") return impl_->log_level;
  const nlohmann::json v = job::get_value(impl_->run, row_of(option));
  if (v.is_null()) return "";  // --warmup not set
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return number_text(v.get<double>());
  return v.dump();  // a whole number
}

std::vector<std::string> Options::names() {
  std::vector<std::string> out;
  for (const job::RunOption& row : job::run_options())
    if (row.in_library) out.push_back(row.name);
  out.emplace_back("log-level");
  return out;
}

nlohmann::json options_given(const Options& o) {
  nlohmann::json given = nlohmann::json::object();
  for (const auto& name : Access::of(o).given) given[name] = o.get(name);
  return given;
}

}  // namespace tessera
