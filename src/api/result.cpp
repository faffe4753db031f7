// tessera::Result and tessera::Plan (include/tessera/tessera.hpp): a report (a plan) as rank 0
// made it, shared; the accessors read its JSON (docs/report.md). A missing field reads as 0 or
// "", as in a default-constructed Result.
#include <memory>
#include <string>
#include <vector>

#include "access.hpp"

namespace tessera {

namespace {

// j[a][b]...: null where any step is missing.
const nlohmann::json& at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  static const nlohmann::json none;
  const nlohmann::json* p = &j;
  for (const char* key : path) {
    if (!p->is_object()) return none;
    const auto it = p->find(key);
    if (it == p->end()) return none;
    p = &*it;
  }
  return *p;
}

std::string text(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }
double number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : 0.0; }
std::int64_t whole(const nlohmann::json& j) { return j.is_number_integer() ? j.get<std::int64_t>() : 0; }
std::string dump(const nlohmann::json& j) { return j.is_null() ? std::string() : j.dump(); }

// The record of rank `rank` in a report's "ranks" (null if none).
const nlohmann::json& rank_record(const nlohmann::json& report, int rank) {
  static const nlohmann::json none;
  const nlohmann::json& ranks = at(report, {"ranks"});
  if (!ranks.is_array()) return none;
  for (const auto& r : ranks)
    if (r.value("rank", -1) == rank) return r;
  return none;
}

}  // namespace

// ---- Result -------------------------------------------------------------------------------------

// Result and Plan are values sharing an immutable Impl: copies share it, a move swaps it with
// a fresh empty one (so that a moved-from value still answers its accessors).
#define TESSERA_SHARED_VALUE(T)                                                                 \
  T::T() : impl_(std::make_shared<const Impl>()) {}                                             \
  T::T(const T& other) = default;                                                               \
  T::T(T&& other) noexcept : impl_(std::make_shared<const Impl>()) { impl_.swap(other.impl_); } \
  T& T::operator=(const T& other) = default;                                                    \
  T& T::operator=(T&& other) noexcept {                                                         \
    impl_.swap(other.impl_);                                                                    \
    return *this;                                                                               \
  }                                                                                             \
  T::~T() = default;

TESSERA_SHARED_VALUE(Result)

double Result::seconds() const noexcept { return impl_->seconds; }
const std::string& Result::json() const noexcept { return impl_->dumped(); }
std::int64_t Result::m() const { return whole(at(impl_->parsed(), {"shape", "m"})); }
std::int64_t Result::n() const { return whole(at(impl_->parsed(), {"shape", "n"})); }
std::int64_t Result::k() const { return whole(at(impl_->parsed(), {"shape", "k"})); }
std::string Result::dtype() const { return text(at(impl_->parsed(), {"dtype"})); }
std::string Result::algorithm() const { return text(at(impl_->parsed(), {"algorithm"})); }
std::string Result::backend() const { return text(at(impl_->parsed(), {"backend"})); }
std::string Result::kernel() const { return text(at(impl_->parsed(), {"kernel"})); }
std::string Result::comm() const { return text(at(impl_->parsed(), {"comm"})); }
std::string Result::write() const { return text(at(impl_->parsed(), {"write"})); }
int Result::grid_rows() const { return static_cast<int>(whole(at(impl_->parsed(), {"grid", "rows"}))); }
int Result::grid_cols() const { return static_cast<int>(whole(at(impl_->parsed(), {"grid", "cols"}))); }
int Result::ranks() const { return static_cast<int>(whole(at(impl_->parsed(), {"nranks"}))); }
double Result::wall_seconds() const { return number(at(impl_->parsed(), {"totals", "wall_seconds"})); }
double Result::gflops() const { return number(at(impl_->parsed(), {"totals", "aggregate_gflops"})); }
double Result::load_imbalance() const { return number(at(impl_->parsed(), {"totals", "load_imbalance"})); }
std::string Result::bound() const { return text(at(impl_->parsed(), {"bound"})); }
double Result::predicted_seconds() const { return number(at(impl_->parsed(), {"predicted", "seconds"})); }
std::string Result::settings_json() const { return dump(at(impl_->parsed(), {"settings"})); }
std::string Result::provenance_json() const { return dump(at(impl_->parsed(), {"provenance"})); }

std::vector<std::string> Result::warnings() const {
  std::vector<std::string> out;
  const nlohmann::json& w = at(impl_->parsed(), {"warnings"});
  if (w.is_array())
    for (const auto& line : w) out.push_back(text(line));
  return out;
}

std::string Result::rank_host(int rank) const { return text(at(rank_record(impl_->parsed(), rank), {"host"})); }
std::string Result::rank_device(int rank) const { return text(at(rank_record(impl_->parsed(), rank), {"device"})); }
bool Result::rank_active(int rank) const { return rank_record(impl_->parsed(), rank).value("active", false); }
double Result::rank_gflops(int rank) const { return number(at(rank_record(impl_->parsed(), rank), {"gflops"})); }

std::vector<std::string> Result::phase_names(int rank) const {
  std::vector<std::string> out;
  const nlohmann::json& order = at(rank_record(impl_->parsed(), rank), {"phase_order"});
  if (order.is_array())
    for (const auto& name : order) out.push_back(text(name));
  return out;
}

double Result::phase_seconds(int rank, const std::string& phase) const {
  const nlohmann::json& phases = at(rank_record(impl_->parsed(), rank), {"phases"});
  if (!phases.is_object()) return 0;
  const auto it = phases.find(phase);
  return it == phases.end() ? 0 : number(*it);
}

// ---- Plan ---------------------------------------------------------------------------------------

TESSERA_SHARED_VALUE(Plan)

const std::string& Plan::text() const noexcept { return impl_->text; }
const std::string& Plan::json() const noexcept { return impl_->json; }
std::int64_t Plan::m() const { return whole(at(impl_->plan, {"shape", "m"})); }
std::int64_t Plan::n() const { return whole(at(impl_->plan, {"shape", "n"})); }
std::int64_t Plan::k() const { return whole(at(impl_->plan, {"shape", "k"})); }
std::string Plan::dtype() const { return tessera::text(at(impl_->plan, {"dtype"})); }
std::string Plan::algorithm() const { return tessera::text(at(impl_->plan, {"algorithm"})); }
std::string Plan::backend() const { return tessera::text(at(impl_->plan, {"backend"})); }
std::string Plan::comm() const { return tessera::text(at(impl_->plan, {"comm"})); }
int Plan::grid_rows() const { return static_cast<int>(whole(at(impl_->plan, {"grid", "rows"}))); }
int Plan::grid_cols() const { return static_cast<int>(whole(at(impl_->plan, {"grid", "cols"}))); }
int Plan::ranks() const { return static_cast<int>(whole(at(impl_->plan, {"ranks"}))); }
int Plan::idle_ranks() const { return static_cast<int>(whole(at(impl_->plan, {"idle_ranks"}))); }
double Plan::predicted_seconds() const { return number(at(impl_->plan, {"predicted_seconds"})); }
std::string Plan::bound() const { return tessera::text(at(impl_->plan, {"predicted", "bound"})); }
std::string Plan::settings_json() const { return dump(at(impl_->plan, {"settings"})); }

}  // namespace tessera
