#include "job/plan.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "comm/path.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "job/refusals.hpp"

namespace tessera::job {

DType pick_dtype(std::optional<DType> want, const io::DatasetInfo& a, const io::DatasetInfo& b) {
  if (want) return *want;
  return a.natural == DType::f32 && b.natural == DType::f32 ? DType::f32 : DType::f64;
}

namespace {
// "5x3", or "5x3 (stored 3x5, --transpose-a)": what the user sees in the file is the stored shape.
std::string shape_text(const io::DatasetInfo& info, bool transposed, const char* flag) {
  const std::string used = std::to_string(info.rows) + "x" + std::to_string(info.cols);
  if (!transposed) return used;
  return used + " (stored " + std::to_string(info.cols) + "x" + std::to_string(info.rows) + ", " + flag + ")";
}
}  // namespace

Shapes inspect_shapes(const JobOptions& o) {
  const io::Operand &aop = o.a, &bop = o.b;
  Shapes s;
  s.a = io::inspect_operand(aop);
  s.b = io::inspect_operand(bop);
  for (const auto& [name, ref, info] : {std::tuple{"A", &aop.ref, &s.a}, std::tuple{"B", &bop.ref, &s.b}})
    if (info->rows < 1 || info->cols < 1)
      throw InputError(std::string(name) + " '" + ref->str() + "' has a zero dimension (" + std::to_string(info->rows) +
                       "x" + std::to_string(info->cols) + ")");
  if (s.a.cols != s.b.rows)
    throw InputError("inner dimensions disagree: A '" + aop.ref.str() + "' is " +
                     shape_text(s.a, aop.transposed, "--transpose-a") + " but B '" + bop.ref.str() + "' is " +
                     shape_text(s.b, bop.transposed, "--transpose-b") + " (A's columns must equal B's rows)");
  s.m = s.a.rows;
  s.n = s.b.cols;
  s.k = s.a.cols;
  return s;
}

void check_old_c(const JobOptions& o, std::int64_t m, std::int64_t n) {
  if (o.beta == 0) return;
  const io::DatasetRef& cref = o.c;
  const std::string why =
      fmt::format("--beta {:g} adds beta times the existing C '{}' to the product", o.beta, cref.text());
  if (!o.overwrite) throw InputError(why + ", which it then replaces: pass --overwrite");
  io::DatasetInfo c;
  try {
    c = io::inspect(cref);
  } catch (const InputError& e) {
    throw InputError(why + ", but it cannot be read: " + e.what());
  }
  if (c.rows != m || c.cols != n)
    throw InputError(why + ", but it is " + std::to_string(c.rows) + "x" + std::to_string(c.cols) + ", not " +
                     std::to_string(m) + "x" + std::to_string(n) + " (M x N of op(A) op(B))");
}

Plan Plan::make(const JobOptions& o, int nranks) {
  for (const auto& [name, v] : {std::pair{"--alpha", o.alpha}, std::pair{"--beta", o.beta}})
    if (!std::isfinite(v)) throw InputError(fmt::format("{} must be a finite number (got {})", name, v));
  const Shapes s = inspect_shapes(o);
  check_old_c(o, s.m, s.n);
  Plan plan;
  plan.m = s.m;
  plan.n = s.n;
  plan.k = s.k;
  plan.dtype = pick_dtype(o.asked.dtype, s.a, s.b);
  plan.grid = o.asked.grid.value_or(partition::choose_grid(plan.m, plan.n, plan.k, nranks));
  partition::Partition check(plan.m, plan.n, plan.k, nranks, plan.grid);  // validates the grid
  return plan;
}

nlohmann::json Plan::to_json() const {
  return {
      {"m", m}, {"n", n}, {"k", k}, {"dtype", dtype == DType::f32 ? "f32" : "f64"}, {"grid", {grid.rows, grid.cols}}};
}

Plan Plan::from_json(const nlohmann::json& j) {
  Plan p;
  p.m = j.at("m").get<std::int64_t>();
  p.n = j.at("n").get<std::int64_t>();
  p.k = j.at("k").get<std::int64_t>();
  if (!parse_dtype(j.at("dtype").get<std::string>(), &p.dtype)) throw Error("a plan names no dtype");
  p.grid = {j.at("grid").at(0).get<int>(), j.at("grid").at(1).get<int>()};
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

namespace {

int bands_asked() {
  return static_cast<int>(env::whole("TESSERA_BANDS").value_or(0));
}

}  // namespace

algorithms::Asked asked_of(const RunOptions& o) {
  check_run_options(o);  // every word, shape and size against its row (job/run_options.hpp)
  algorithms::Asked r;
  r.algorithm = o.algorithm;  // a name of the registry's, or auto (checked above)
  r.backend = backend::parse_kind(o.backend);
  if (o.dtype != "auto") {
    r.dtype = DType::f64;
    (void)parse_dtype(o.dtype, &*r.dtype);  // one of dtype_words() (checked above)
  }
  r.comm = comm::parse_path(o.comm);
  r.kernel = o.kernel;
  r.write = algorithms::parse_write_route(o.write);
  r.panel_width = o.panel_width;
  r.gpu_memory = static_cast<std::int64_t>(parse_bytes(o.gpu_memory, "--gpu-memory"));
  r.baseline = o.baseline;
  r.verify = o.verify;
  if (!o.grid.empty()) r.grid = partition::parse_grid(o.grid);
  r.bands = bands_asked();
  return r;
}

algorithms::Environment assumed_environment(const algorithms::Asked& asked) {
  algorithms::Environment env;
  env.gpu = asked.backend == backend::Kind::cuda || (!asked.backend && backend::visible_gpu_count() > 0);
  env.nccl = comm::nccl_compiled();
  env.cuda_aware = comm::mpi_cuda_aware();
  env.in_place_write = asked.write != algorithms::WriteRoute::gather;
  return env;
}

algorithms::MachineModel machine_model(const JobOptions& o) {
  algorithms::GpuNode gpus;
  if (o.machine.empty() && o.asked.backend != backend::Kind::cpu) {  // a CPU run does not start the CUDA driver for it
    const std::vector<std::string> described = backend::describe_gpus();
    gpus.count = static_cast<int>(described.size());
    if (!described.empty()) gpus.model = described.front();  // "0: NVIDIA H200 (sm_90, 139.8 GiB)"
  }
  return algorithms::MachineModel::load(o.machine, gpus);
}

}  // namespace tessera::job
