#pragma once
// What rank 0 decides from the inputs before anything is read, and hands every rank: the shapes,
// the compute precision and the process grid.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "algorithms/choice.hpp"
#include "algorithms/machine.hpp"
#include "core/dtype.hpp"
#include "io/hdf5_io.hpp"
#include "io/operand.hpp"
#include "job/job_options.hpp"
#include "job/run_job.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

struct Plan {
  std::int64_t m = 0, n = 0, k = 0;
  // A batch of A (b x M x K) times a shared B: b, and m = b M (the stack); C is written b x M x N.
  // 0: no batch. Rank 0's, for the writer (not broadcast).
  std::int64_t matrices = 0;
  DType dtype = DType::f64;
  // What C is stored as (--c-dtype; auto: float16 / bfloat16 when A and B both are, else as computed).
  io::Stored stored = io::Stored::same;
  // "f16" / "bf16": A and B are both stored so (half_inputs_of); "" otherwise.
  std::string half_inputs;
  partition::GridShape grid;

  // Rank 0 looks at the inputs and decides shapes, dtype and grid. Throws InputError. (The paths
  // were checked before: guard_run_paths.)
  static Plan make(const JobOptions& o, int nranks);
  // As JSON, for the plan's broadcast (with the machine model, job/run_job.cpp).
  nlohmann::json to_json() const;
  static Plan from_json(const nlohmann::json& j);
};

// The inputs' logical shapes (op(A) M x K, op(B) K x N) and the dtype auto picks; throws
// InputError for a zero dimension or inner dimensions that disagree, naming stored shapes and
// transposes. Used by the run's plan and the dry run.
struct Shapes {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t matrices = 0;  // A a batch (stacked, shared B): its matrices; C b x (m / b) x n
  io::DatasetInfo a, b;       // op(A), op(B): rows and cols are the logical ones
};
Shapes inspect_shapes(const JobOptions& o);

// What C is stored as for --c-dtype `c_dtype` (auto: float16 / bfloat16 where A and B both are,
// else as computed), `same` where that is the computed type. Throws InputError for another word.
io::Stored stored_for(const std::string& c_dtype, const Shapes& s, DType computed);

// "f16" or "bf16" where A and B are both stored as float16 (both as bfloat16), the product is
// computed in float32 and alpha is 1: every value the GEMM takes is then exact in that type, so
// GPUs multiply them on its tensor cores (FP32 accumulation) at no loss (algorithms::Problem);
// "" otherwise.
std::string half_inputs_of(const Shapes& s, DType computed, double alpha);

// C named with a window (written in place into an existing dataset): not with a batch of A.
// Throws InputError.
void check_c_window(const JobOptions& o, const Shapes& s);

// With beta != 0: C_old (--c) must exist as an m x n dataset. Throws InputError naming the cause.
void check_old_c(const JobOptions& o, std::int64_t m, std::int64_t n);

// --dtype `want` (nullopt: auto) for inputs described by `a` and `b`: auto is f32 when both are
// float32, else f64.
DType pick_dtype(std::optional<DType> want, const io::DatasetInfo& a, const io::DatasetInfo& b);
// What a product of `dtype` refuses of `o`: a complex alpha or beta for real data (`what` names
// the data: "A is float64, B float64"), a kernel other than the BLAS's for complex data. Throws
// InputError.
void refuse_complex_options(const JobOptions& o, DType dtype, const std::string& what);

// What the ranks would have, as the process running the dry run sees it, one GPU per rank
// (a run agrees on its own: job/environment.hpp).
algorithms::Environment assumed_environment(const algorithms::Asked& asked);
// The machine model the run is predicted with: --machine, $TESSERA_MACHINE_FILE, the file in
// configs/machines that matches the GPUs rank 0 sees (GPU runs), or the default.
algorithms::MachineModel machine_model(const JobOptions& o);

}  // namespace tessera::job
