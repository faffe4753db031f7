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
  if (is_complex(a.natural) != is_complex(b.natural)) {
    const bool a_complex = is_complex(a.natural);
    throw InputError(
        fmt::format("A is {} and B is {}: a product of a complex and a real matrix is not done; store "
                    "the real one as complex ({} with a zero imaginary part)",
                    a.stored_type, b.stored_type,
                    dtype_name(real_of(a_complex ? a.natural : b.natural) == DType::f32 ? DType::c64 : DType::c128)));
  }
  if (is_complex(a.natural)) {  // --dtype names the precision of the parts
    if (want) return real_of(*want) == DType::f32 ? DType::c64 : DType::c128;
    return a.natural == DType::c64 && b.natural == DType::c64 ? DType::c64 : DType::c128;
  }
  if (want) return *want;
  return a.natural == DType::f32 && b.natural == DType::f32 ? DType::f32 : DType::f64;
}

void refuse_complex_options(const JobOptions& o, DType dtype, const std::string& what) {
  if (!is_complex(dtype) && (o.alpha_imag != 0 || o.beta_imag != 0))
    throw InputError(
        fmt::format("--alpha-imag {:g} / --beta-imag {:g}: a complex alpha or beta (an imaginary "
                    "part) takes complex matrices, and {}",
                    o.alpha_imag, o.beta_imag, what));
  if (is_complex(dtype) && o.asked.kernel != "auto" && o.asked.kernel != "openblas" && o.asked.kernel != "cublas")
    throw InputError("--kernel " + o.asked.kernel + ": a complex product runs through the BLAS's complex GEMM (" +
                     "openblas on the CPU, cublas on a GPU); use --kernel auto");
}

io::Stored stored_for(const std::string& c_dtype, const Shapes& s, DType computed) {
  io::Stored stored = io::Stored::same;
  if (is_complex(computed)) {  // C stored as computed
    if (!c_dtype.empty() && c_dtype != "auto")
      throw InputError("--c-dtype " + c_dtype + " converts a real C; a complex C is stored as computed (" +
                       dtype_name(computed) + "): leave --c-dtype auto");
    return stored;
  }
  if (c_dtype.empty() || c_dtype == "auto") {
    // Half-precision inputs give a half-precision C (half the bytes written), as numpy would.
    if (s.a.stored_type == s.b.stored_type && s.a.stored_type == "float16") stored = io::Stored::f16;
    if (s.a.stored_type == s.b.stored_type && s.a.stored_type == "bfloat16") stored = io::Stored::bf16;
  } else if (!io::parse_stored(c_dtype, &stored) || stored == io::Stored::same) {
    throw InputError("--c-dtype " + c_dtype + " is not one of auto, f16, bf16, f32, f64");
  }
  return io::converts(stored, computed) ? stored : io::Stored::same;
}

std::string half_inputs_of(const Shapes& s, DType computed, double alpha) {
  // (alpha scales B as it is read: another alpha leaves values no 16-bit type holds.)
  if (computed != DType::f32 || alpha != 1 || s.a.stored_type != s.b.stored_type) return "";
  return s.a.stored_type == "float16" ? "f16" : s.a.stored_type == "bfloat16" ? "bf16" : "";
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
  // A batch, b x M x K named without an index: the stack of its matrices times a B they share
  // (one (b M) x K GEMM), C the b x M x N batch of their products.
  if (s.b.stacked())
    throw InputError("B '" + bop.ref.str() + "' is a batch of " + std::to_string(s.b.stored_matrices) + " matrices (" +
                     std::to_string(s.b.stored_matrices) + "x" + std::to_string(s.b.stored_rows) + "x" +
                     std::to_string(s.b.stored_cols) +
                     "): a batch of A multiplies one B they share; for a B per "
                     "matrix, list the products in a manifest with A[i], B[i] and C[i] of an existing b x M x N C "
                     "(docs/usage.md, \"One matrix of a "
                     "batch\")");
  if (s.a.stacked() && aop.transposed)
    throw InputError("A '" + aop.ref.str() + "' is a batch of " + std::to_string(s.a.stored_matrices) +
                     " matrices: --transpose-a of a batch (each matrix transposed) is not done yet; list the products "
                     "in a manifest with A[i] and transpose-a");
  if (s.a.cols != s.b.rows)
    throw InputError("inner dimensions disagree: A '" + aop.ref.str() + "' is " +
                     shape_text(s.a, aop.transposed, "--transpose-a") + " but B '" + bop.ref.str() + "' is " +
                     shape_text(s.b, bop.transposed, "--transpose-b") + " (A's columns must equal B's rows)");
  s.m = s.a.rows;
  s.n = s.b.cols;
  s.k = s.a.cols;
  s.matrices = s.a.stacked() ? s.a.stored_matrices : 0;
  return s;
}

void check_old_c(const JobOptions& o, std::int64_t m, std::int64_t n) {
  if (o.beta == 0 && o.beta_imag == 0) return;
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

void check_c_window(const JobOptions& o, const Shapes& s) {
  if (!o.c.slice) return;
  if (s.matrices > 0)
    throw InputError("C '" + o.c.str() + "' is a window, but A is a batch of " + std::to_string(s.matrices) +
                     " matrices, whose C is written as a whole 3-D dataset");
  // (A and B are never in C's file: job_paths.cpp's guard refuses that before, so the window
  // cannot overlap what the run reads.)
}

Plan Plan::make(const JobOptions& o, int nranks) {
  for (const auto& [name, v] : {std::pair{"--alpha", o.alpha}, std::pair{"--beta", o.beta},
                                std::pair{"--alpha-imag", o.alpha_imag}, std::pair{"--beta-imag", o.beta_imag}})
    if (!std::isfinite(v)) throw InputError(fmt::format("{} must be a finite number (got {})", name, v));
  const Shapes s = inspect_shapes(o);
  check_c_window(o, s);
  check_old_c(o, s.m, s.n);
  Plan plan;
  plan.m = s.m;
  plan.n = s.n;
  plan.k = s.k;
  plan.matrices = s.matrices;
  plan.dtype = pick_dtype(o.asked.dtype, s.a, s.b);
  refuse_complex_options(o, plan.dtype, "A is " + s.a.stored_type + ", B " + s.b.stored_type);
  plan.stored = stored_for(o.c_dtype, s, plan.dtype);
  plan.half_inputs = half_inputs_of(s, plan.dtype, o.alpha);
  plan.grid = o.asked.grid.value_or(partition::choose_grid(plan.m, plan.n, plan.k, nranks));
  partition::Partition check(plan.m, plan.n, plan.k, nranks, plan.grid);  // validates the grid
  return plan;
}

nlohmann::json Plan::to_json() const {
  return {{"m", m},
          {"n", n},
          {"k", k},
          {"dtype", dtype_word(dtype)},
          {"stored", io::stored_word(stored)},
          {"half_inputs", half_inputs},
          {"grid", {grid.rows, grid.cols}}};
}

Plan Plan::from_json(const nlohmann::json& j) {
  Plan p;
  p.m = j.at("m").get<std::int64_t>();
  p.n = j.at("n").get<std::int64_t>();
  p.k = j.at("k").get<std::int64_t>();
  if (!parse_any_dtype(j.at("dtype").get<std::string>(), &p.dtype)) throw Error("a plan names no dtype");
  if (!io::parse_stored(j.at("stored").get<std::string>(), &p.stored)) throw Error("a plan names no stored type");
  p.half_inputs = j.at("half_inputs").get<std::string>();
  p.grid = {j.at("grid").at(0).get<int>(), j.at("grid").at(1).get<int>()};
  return p;
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
