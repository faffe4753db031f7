// tessera::Options (include/tessera/tessera.hpp): the options of `tessera run` behind one pointer,
// set by typed setters or by their command-line names (one table, so that set(), get() and names()
// agree with the setters).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "access.hpp"
#include "job/run_provenance.hpp"

namespace tessera {

namespace {

[[noreturn]] void bad_value(const std::string& option, const std::string& value, const char* what) {
  throw std::invalid_argument("tessera::Options: " + option + " must be " + what + ", not '" + value + "'");
}

bool parse_bool(const std::string& option, const std::string& v) {
  for (const char* yes : {"true", "1", "on", "yes"})
    if (v == yes) return true;
  for (const char* no : {"false", "0", "off", "no"})
    if (v == no) return false;
  bad_value(option, v, "true or false");
}

std::int64_t parse_int(const std::string& option, const std::string& v, std::int64_t low, std::int64_t high) {
  char* end = nullptr;
  errno = 0;
  const long long x = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || x < low || x > high)
    bad_value(option, v, "a whole number");
  return x;
}

int parse_count(const std::string& option, const std::string& v) {
  return static_cast<int>(parse_int(option, v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

double parse_double(const std::string& option, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || (errno == ERANGE && x == 0))
    bad_value(option, v, "a finite number");
  return x;
}

// --m, --n, --k of a dry run.
Options& set_dimension(Options& o, char which, std::int64_t value) {
  auto& impl = Access::edit(o);  // Options::Impl: private, reached through Access
  (which == 'm' ? impl.run.m : which == 'n' ? impl.run.n : impl.run.k) = value;
  impl.give(std::string(1, which));
  return o;
}

std::string number_text(double x) {
  std::string s = std::to_string(x);  // "1.000000": trimmed to "1"
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// Each option's setter by its command-line name; get() reads the values back through
// job::typed_options, the same table the report's provenance uses.
struct Entry {
  const char* name;
  std::function<void(Options&, const std::string&)> set;
};

#define TESSERA_TEXT(NAME, SETTER)                              \
  Entry {                                                       \
    NAME, [](Options& o, const std::string& v) { o.SETTER(v); } \
  }
#define TESSERA_FLAG(NAME, SETTER)                                                \
  Entry {                                                                         \
    NAME, [](Options& o, const std::string& v) { o.SETTER(parse_bool(NAME, v)); } \
  }

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      TESSERA_TEXT("a", a),
      TESSERA_TEXT("b", b),
      TESSERA_TEXT("c", c),
      TESSERA_TEXT("report", report),
      TESSERA_TEXT("algorithm", algorithm),
      TESSERA_TEXT("comm", comm),
      {"panel-width",
       [](Options& o, const std::string& v) { o.panel_width(parse_int("panel-width", v, 0, INT64_MAX)); }},
      TESSERA_TEXT("grid", grid),
      TESSERA_TEXT("backend", backend),
      TESSERA_TEXT("kernel", kernel),
      TESSERA_TEXT("dtype", dtype),
      TESSERA_TEXT("baseline", baseline),
      TESSERA_FLAG("overwrite", overwrite),
      TESSERA_FLAG("quiet", quiet),
      TESSERA_FLAG("verify", verify),
      TESSERA_FLAG("allow-nonfinite", allow_nonfinite),
      TESSERA_FLAG("fail-on-nonfinite", fail_on_nonfinite),
      TESSERA_TEXT("progress", progress),
      TESSERA_TEXT("gpu-memory", gpu_memory),
      TESSERA_TEXT("write", write),
      TESSERA_TEXT("machine", machine),
      TESSERA_FLAG("transpose-a", transpose_a),
      TESSERA_FLAG("transpose-b", transpose_b),
      {"alpha", [](Options& o, const std::string& v) { o.alpha(parse_double("alpha", v)); }},
      {"beta", [](Options& o, const std::string& v) { o.beta(parse_double("beta", v)); }},
      {"repeat", [](Options& o, const std::string& v) { o.repeat(parse_count("repeat", v)); }},
      {"warmup", [](Options& o, const std::string& v) { o.warmup(parse_count("warmup", v)); }},
      {"timeout", [](Options& o, const std::string& v) { o.timeout(parse_count("timeout", v)); }},
      {"m", [](Options& o, const std::string& v) { set_dimension(o, 'm', parse_int("m", v, 0, INT64_MAX)); }},
      {"n", [](Options& o, const std::string& v) { set_dimension(o, 'n', parse_int("n", v, 0, INT64_MAX)); }},
      {"k", [](Options& o, const std::string& v) { set_dimension(o, 'k', parse_int("k", v, 0, INT64_MAX)); }},
      {"ranks", [](Options& o, const std::string& v) { o.ranks(parse_count("ranks", v)); }},
      {"ranks-per-node", [](Options& o, const std::string& v) { o.ranks_per_node(parse_count("ranks-per-node", v)); }},
  };
  return entries;
}

#undef TESSERA_TEXT
#undef TESSERA_FLAG

const Entry* find(const std::string& name) {
  for (const auto& e : table())
    if (name == e.name) return &e;
  return nullptr;
}

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

// One setter each: the field, and the name recorded as given.
#define TESSERA_SETTER(SETTER, TYPE, NAME, ...) \
  Options& Options::SETTER(TYPE value) {        \
    auto& r = impl_->run;                       \
    (void)r;                                    \
    __VA_ARGS__;                                \
    impl_->give(NAME);                          \
    return *this;                               \
  }
TESSERA_SETTER(a, const std::string&, "a", r.a = value)
TESSERA_SETTER(b, const std::string&, "b", r.b = value)
TESSERA_SETTER(c, const std::string&, "c", r.c = value)
TESSERA_SETTER(transpose_a, bool, "transpose-a", r.transpose_a = value)
TESSERA_SETTER(transpose_b, bool, "transpose-b", r.transpose_b = value)
TESSERA_SETTER(alpha, double, "alpha", r.alpha = value)
TESSERA_SETTER(beta, double, "beta", r.beta = value)
TESSERA_SETTER(backend, const std::string&, "backend", r.backend = value.empty() ? "auto" : value)
TESSERA_SETTER(kernel, const std::string&, "kernel", r.kernel = value.empty() ? "auto" : value)
TESSERA_SETTER(dtype, const std::string&, "dtype", r.dtype = value.empty() ? "auto" : value)
TESSERA_SETTER(algorithm, const std::string&, "algorithm", r.algorithm = value.empty() ? "auto" : value)
TESSERA_SETTER(comm, const std::string&, "comm", r.comm = value.empty() ? "auto" : value)
TESSERA_SETTER(grid, const std::string&, "grid", r.grid = value == "auto" ? "" : value)
TESSERA_SETTER(panel_width, std::int64_t, "panel-width", r.panel_width = value)
TESSERA_SETTER(gpu_memory, const std::string&, "gpu-memory", r.gpu_memory = value)
TESSERA_SETTER(write, const std::string&, "write", r.write = value.empty() ? "auto" : value)
TESSERA_SETTER(machine, const std::string&, "machine", r.machine = value)
TESSERA_SETTER(baseline, const std::string&, "baseline", r.baseline = value)
TESSERA_SETTER(overwrite, bool, "overwrite", r.overwrite = value)
TESSERA_SETTER(verify, bool, "verify", r.verify = value)
TESSERA_SETTER(allow_nonfinite, bool, "allow-nonfinite", r.allow_nonfinite = value)
TESSERA_SETTER(fail_on_nonfinite, bool, "fail-on-nonfinite", r.fail_on_nonfinite = value)
TESSERA_SETTER(report, const std::string&, "report", r.report = value)
TESSERA_SETTER(quiet, bool, "quiet", r.quiet = value)
TESSERA_SETTER(progress, const std::string&, "progress", r.progress = value.empty() ? "off" : value)
TESSERA_SETTER(log_level, const std::string&, "log-level", impl_->log_level = value)
TESSERA_SETTER(repeat, int, "repeat", r.repeat = value)
TESSERA_SETTER(warmup, int, "warmup", r.warmup = value)
TESSERA_SETTER(timeout, int, "timeout", r.timeout = value)
TESSERA_SETTER(ranks, int, "ranks", r.ranks = value)
TESSERA_SETTER(ranks_per_node, int, "ranks-per-node", r.ranks_per_node = value)
#undef TESSERA_SETTER

Options& Options::shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  set_dimension(*this, 'm', m);
  set_dimension(*this, 'n', n);
  return set_dimension(*this, 'k', k);
}

Options& Options::set(const std::string& option, const std::string& value) {
  if (option == "log-level") return log_level(value);
  const Entry* e = find(option);
  if (e == nullptr) throw std::invalid_argument("tessera::Options: no option '" + option + "' (tessera run --help)");
  e->set(*this, value);
  return *this;
}

std::string Options::get(const std::string& option) const {
  if (option == "log-level") return impl_->log_level;
  const Entry* e = find(option);
  if (e == nullptr) throw std::invalid_argument("tessera::Options: no option '" + option + "' (tessera run --help)");
  const nlohmann::json v = job::typed_options(impl_->run).value(option, nlohmann::json());
  if (v.is_null()) return "";  // --warmup not set
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return number_text(v.get<double>());
  return v.dump();  // a whole number
}

std::vector<std::string> Options::names() {
  std::vector<std::string> out;
  for (const auto& e : table()) out.emplace_back(e.name);
  out.emplace_back("log-level");
  return out;
}

nlohmann::json options_given(const Options& o) {
  nlohmann::json given = nlohmann::json::object();
  for (const auto& name : Access::of(o).given) given[name] = o.get(name);
  return given;
}

}  // namespace tessera
