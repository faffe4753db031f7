#include "job/plan.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <tuple>

#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "comm/path.hpp"
#include "core/error.hpp"
#include "job/refusals.hpp"

namespace tessera::job {

DType pick_dtype(const std::string& want, const io::DatasetInfo& a, const io::DatasetInfo& b) {
  if (want == "f32" || want == "float32") return DType::f32;
  if (want == "f64" || want == "float64") return DType::f64;
  if (want != "auto") throw InputError("invalid --dtype '" + want + "' (choose: auto, f32, f64)");
  return a.natural == DType::f32 && b.natural == DType::f32 ? DType::f32 : DType::f64;
}

Plan Plan::make(const RunOptions& o, int nranks) {
  const auto aref = io::DatasetRef::parse(o.a);
  const auto bref = io::DatasetRef::parse(o.b);
  const auto a = io::inspect(aref);
  const auto b = io::inspect(bref);
  for (const auto& [name, ref, info] : {std::tuple{"A", &aref, &a}, std::tuple{"B", &bref, &b}})
    if (info->rows < 1 || info->cols < 1)
      throw InputError(std::string(name) + " '" + ref->str() + "' has a zero dimension (" + std::to_string(info->rows) +
                       "x" + std::to_string(info->cols) + ")");
  if (a.cols != b.rows)
    throw InputError("inner dimensions disagree: A '" + aref.str() + "' is " + std::to_string(a.rows) + "x" +
                     std::to_string(a.cols) + " but B '" + bref.str() + "' is " + std::to_string(b.rows) + "x" +
                     std::to_string(b.cols) + " (A's columns must equal B's rows)");
  Plan plan;
  plan.m = a.rows;
  plan.n = b.cols;
  plan.k = a.cols;
  plan.dtype = pick_dtype(o.dtype, a, b);
  plan.grid = o.grid.empty() ? partition::choose_grid(plan.m, plan.n, plan.k, nranks) : partition::parse_grid(o.grid);
  partition::Partition check(plan.m, plan.n, plan.k, nranks, plan.grid);  // validates the grid
  return plan;
}

std::string Plan::encode() const {
  const Plan& p = *this;
  return std::to_string(p.m) + " " + std::to_string(p.n) + " " + std::to_string(p.k) + " " +
         std::to_string(static_cast<int>(p.dtype)) + " " + std::to_string(p.grid.rows) + " " +
         std::to_string(p.grid.cols);
}
Plan Plan::decode(const std::string& s) {
  Plan p;
  int dt = 0;
  std::sscanf(s.c_str(), "%ld %ld %ld %d %d %d", &p.m, &p.n, &p.k, &dt, &p.grid.rows, &p.grid.cols);
  p.dtype = static_cast<DType>(dt);
  return p;
}

std::size_t parse_bytes(const std::string& text, const char* option) {
  if (text.empty()) return 0;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = kGiB;
  else if (unit == "T" || unit == "TiB")
    scale = kGiB * 1024;
  if (used == 0 || scale == 0 || !(value > 0))
    throw InputError(std::string("invalid ") + option + " '" + text + "': expected a size like 512M, 8G or 1.5G");
  return static_cast<std::size_t>(value * scale);
}

int bands_asked() {
  const char* env = std::getenv("TESSERA_BANDS");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 1 << 20)
    throw InputError(std::string("TESSERA_BANDS='") + env + "' is not a positive integer");
  return static_cast<int>(n);
}

algorithms::Request choice_request(const RunOptions& o) {
  algorithms::Request r;
  r.algorithm = o.algorithm;
  r.comm = o.comm;
  r.kernel = o.kernel;
  r.write = o.write;
  r.panel_width = o.panel_width;
  r.gpu_memory = static_cast<std::int64_t>(parse_bytes(o.gpu_memory, "--gpu-memory"));
  r.verify = o.verify;
  r.baseline = !o.baseline.empty();
  r.grid_given = !o.grid.empty();
  r.bands = bands_asked();
  return r;
}

algorithms::Environment choice_environment(const RunOptions& o) {
  algorithms::Environment env;
  env.gpu = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
  env.nccl = env.gpu && comm::nccl_compiled();
  env.cuda_aware = comm::mpi_cuda_aware();
  return env;
}

}  // namespace tessera::job
