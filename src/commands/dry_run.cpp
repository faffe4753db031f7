#include "commands/dry_run.hpp"

#include "report/provenance.hpp"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_io.hpp"
#include "job/choose_algorithm.hpp"
#include "job/dryrun.hpp"
#include "job/job_paths.hpp"
#include "job/plan.hpp"
#include "partition/partition.hpp"

namespace tessera::commands {

void dry_run(const job::RunOptions& o, const comm::Comm& comm) {
  comm.step([&] {
    if (comm.rank() != 0) return;
    // The one rule for every path (job/job_paths.hpp), before anything else.
    for (const auto& note : job::guard_run_paths(o).notes) std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
    std::int64_t m = o.m, n = o.n, k = o.k;
    DType dtype = o.dtype == "f64" || o.dtype == "float64" ? DType::f64 : DType::f32;
    if (!o.a.empty() || !o.b.empty()) {
      const auto a = io::inspect(io::DatasetRef::parse(o.a));
      const auto b = io::inspect(io::DatasetRef::parse(o.b));
      if (a.cols != b.rows)
        throw InputError("inner dimensions disagree: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                         ", B is " + std::to_string(b.rows) + "x" + std::to_string(b.cols));
      m = a.rows;
      n = b.cols;
      k = a.cols;
      dtype = job::pick_dtype(o.dtype, a, b);
    } else if (o.dtype != "auto" && o.dtype != "f32" && o.dtype != "float32" && o.dtype != "f64" &&
               o.dtype != "float64") {
      throw InputError("invalid --dtype '" + o.dtype + "' (choose: auto, f32, f64)");
    }
    if (m < 1 || n < 1 || k < 1)
      throw InputError("--dry-run needs --a and --b, or --m, --n and --k (each >= 1)");
    if (o.ranks < 0) throw InputError("--ranks must be at least 1 (got " + std::to_string(o.ranks) + ")");
    const int ranks = o.ranks > 0 ? o.ranks : comm.size();
    if (ranks > 100000) throw InputError("--ranks " + std::to_string(ranks) + " is beyond 100,000");
    const auto grid = o.grid.empty() ? partition::choose_grid(m, n, k, ranks) : partition::parse_grid(o.grid);
    const bool gpu = o.backend == "cuda" || (o.backend == "auto" && backend::visible_gpu_count() > 0);
    // What a real run would choose (job/choose_algorithm.hpp), assuming one GPU per rank.
    const bool nccl = gpu && comm::nccl_compiled();
    job::PlanChoice choice;
    choice.algorithm = job::choose_algorithm(o, gpu, nccl, ranks, m, n, k, grid);
    choice.panel_width = o.panel_width;
    choice.gpu_memory_limit = static_cast<std::int64_t>(job::parse_bytes(o.gpu_memory, "--gpu-memory"));
    choice.accumulating_kernel = gpu && backend::gpu_kernel_accumulates(o.kernel, dtype);
    choice.in_place_write = o.write != "gather";
    if (choice.algorithm == "summa")
      choice.comm = comm::path_name(comm::choose_path(o.comm, gpu, nccl, comm::mpi_cuda_aware()));
    if (choice.algorithm == "ksplit") choice.comm = nccl && o.comm != "host" ? "nccl" : "host";
    if (ranks == 1) choice.comm = "none";
    const job::DryRun plan = job::plan_run(m, n, k, dtype, ranks, grid, gpu, choice);
    std::fputs(plan.to_text(m, n, k, dtype, gpu).c_str(), stdout);
    if (!o.report.empty()) {
      nlohmann::json j = {{"schema", report::kDryRunSchema}, {"provenance", report::provenance()}};
      j.update(plan.to_json());
      j["shape"] = {{"m", m}, {"n", n}, {"k", k}};
      j["dtype"] = dtype_name(dtype);
      j["backend"] = gpu ? "cuda" : "cpu";
      io::write_file_replacing(o.report, j.dump(2) + "\n");
    }
  });
}

}  // namespace tessera::commands
