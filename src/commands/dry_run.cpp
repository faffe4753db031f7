#include "commands/dry_run.hpp"

#include "report/provenance.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "algorithms/choice.hpp"
#include "algorithms/footprint.hpp"
#include "algorithms/machine.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_io.hpp"
#include "job/job_paths.hpp"
#include "job/launch.hpp"
#include "job/plan.hpp"
#include "job/run_provenance.hpp"
#include "partition/partition.hpp"

namespace tessera::commands {

namespace {

using algorithms::Footprint;
using algorithms::RankFootprint;

std::string gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

// K split: more ranks compute than the grid has blocks, each a partial of all of C.
bool splits_k(const Footprint& f) { return f.busy > f.grid.size(); }

nlohmann::json to_json(const Footprint& f, const algorithms::MachineModel& machine, const std::string& why,
                       const nlohmann::json& settings) {
  const auto rank = [](const RankFootprint& p) {
    return nlohmann::json{{"rows", p.rows},
                          {"cols", p.cols},
                          {"host_bytes", p.host_bytes},
                          {"gpu_bytes", p.gpu_bytes},
                          {"read_bytes", p.read_bytes},
                          {"recv_bytes", p.recv_bytes},
                          {"send_bytes", p.send_bytes},
                          {"write_bytes", p.write_bytes},
                          {"seconds", p.seconds()}};
  };
  return {{"algorithm", f.algorithm},
          {"comm", f.setting.comm_name()},
          {"settings", settings},
          {"grid", {{"rows", f.grid.rows}, {"cols", f.grid.cols}}},
          {"ranks", f.ranks},
          {"idle_ranks", f.ranks - f.busy},
          {"bands", f.setting.bands},
          {"rank0", rank(f.root)},
          {"largest", rank(f.largest)},
          {"total_read_bytes", f.total_read_bytes},
          {"total_comm_bytes", f.total_comm_bytes},
          {"max_send_bytes", f.max_send_bytes},
          {"max_recv_bytes", f.max_recv_bytes},
          {"write", f.setting.in_place_write ? "in place" : "rank 0"},
          {"predicted_seconds", f.predicted_seconds()},
          {"predicted",
           {{"startup", f.predicted.startup},
            {"read", f.predicted.read},
            {"compute", f.predicted.compute},
            {"write", f.predicted.write},
            {"compress", f.predicted.compress},
            {"communication", f.predicted.communication},
            {"bound", f.predicted.bound()}}},
          {"machine", machine.name},
          {"why", why}};
}

// "bands 1, comm host, kernel openblas, ...": the settings as the algorithm describes them.
std::string settings_text(const nlohmann::json& settings) {
  std::string out;
  for (const auto& [key, value] : settings.items())
    out += (out.empty() ? "" : ", ") + key + " " + (value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

std::string to_text(const Footprint& f, const algorithms::Problem& p, const std::string& machine,
                    const std::string& why, const nlohmann::json& settings) {
  const bool k_split = splits_k(f), to_root = !f.setting.in_place_write;
  std::string out = fmt::format("dry run: C({}x{}) = A({}x{}) * B({}x{}), {}, {} rank{} ({}), algorithm {} ({})\n", p.m,
                                p.n, p.m, p.k, p.k, p.n, dtype_name(p.dtype), f.ranks, f.ranks == 1 ? "" : "s",
                                f.setting.gpu ? "GPU" : "CPU", f.algorithm, why);
  out += fmt::format("  settings      {}\n", settings_text(settings));
  if (k_split)
    out += fmt::format("  grid          K split over {} rank{}\n", f.busy, f.busy == 1 ? "" : "s");
  else
    out += fmt::format(
        "  grid          {}x{}{}\n", f.grid.rows, f.grid.cols,
        f.ranks > f.busy ? fmt::format(" ({} idle rank{})", f.ranks - f.busy, f.ranks - f.busy == 1 ? "" : "s") : "");
  out += fmt::format("  largest block {}x{}{}\n", f.largest.rows, f.largest.cols,
                     k_split ? " (a partial of all of C)" : "");
  if (f.setting.bands > 1)
    out += fmt::format("  bands of C    {} (each written while the next computes)\n", f.setting.bands);
  out += fmt::format("  host memory   rank 0 {}, others up to {}\n", gib(f.root.host_bytes), gib(f.largest.host_bytes));
  if (f.setting.gpu)
    out += fmt::format("  GPU memory    up to {} per rank\n", gib(std::max(f.root.gpu_bytes, f.largest.gpu_bytes)));
  out += fmt::format("  file reads    {} per rank (largest), {} in all\n", gib(f.largest.read_bytes),
                     gib(f.total_read_bytes));
  if (!k_split && f.max_recv_bytes > 0)
    out +=
        fmt::format("  received      {} per rank (largest) from other ranks while computing\n", gib(f.max_recv_bytes));
  if (k_split || to_root)
    out += fmt::format("  {}     {} per rank (largest), {} between ranks in all\n",
                       k_split ? (to_root ? "reduce   " : "sums of C") : "to rank 0", gib(f.max_send_bytes),
                       gib(f.total_comm_bytes));
  else if (f.total_comm_bytes > 0)
    out += fmt::format("  between ranks {} in all; every rank writes its own C block\n", gib(f.total_comm_bytes));
  const auto& at = f.predicted;
  out += fmt::format(
      "  predicted     {:.2f} s: start-up {:.2f} s, read {:.2f} s, compute {:.2f} s, write {:.2f} s; "
      "bounded by {} (machine {})\n",
      at.total(), at.startup, at.read, at.compute, at.write, at.bound(), machine);
  if (at.communication > 0)
    out += fmt::format("  communication {:.2f} s (the slowest rank's, part of compute or write){}\n", at.communication,
                       p.multi_node() ? fmt::format(", {} nodes of {} ranks", p.nodes(), p.ranks_per_node) : "");
  out += fmt::format("  C written     {}\n", to_root ? "by rank 0" : "in place, every rank its own rows");
  if (at.compress > 0)
    out += fmt::format("  compressed    {} on rank 0{}: {:.2f} s, part of the write\n", p.compression,
                       p.compress_threads > 1 || p.compression == "gzip"
                           ? fmt::format(" by {} thread{}", p.compress_threads, p.compress_threads == 1 ? "" : "s")
                           : " (HDF5's filter, one thread)",
                       at.compress);
  return out;
}

// M, N, K and the dtype: from the input files when given, else --m/--n/--k.
algorithms::Problem problem_of(const job::RunOptions& o, const job::JobOptions& jo, int ranks) {
  const algorithms::Asked& asked = jo.asked;
  algorithms::Problem p;
  p.m = o.m;
  p.n = o.n;
  p.k = o.k;
  p.dtype = asked.dtype.value_or(DType::f32);
  if (jo.has_a() || jo.has_b()) {
    const job::Shapes s = job::inspect_shapes(jo);  // op(A), op(B): --transpose-a/-b swap the stored shapes
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.dtype = job::pick_dtype(asked.dtype, s.a, s.b);
    p.half_inputs = job::half_inputs_of(s, p.dtype, jo.alpha);
    job::refuse_complex_options(jo, p.dtype, "A is " + s.a.stored_type + ", B " + s.b.stored_type);
  } else {
    job::refuse_complex_options(jo, p.dtype, "--m/--n/--k plan a real product");
  }
  if (p.m < 1 || p.n < 1 || p.k < 1) throw InputError("--dry-run needs --a and --b, or --m, --n and --k (each >= 1)");
  p.ranks = ranks;
  p.grid = asked.grid.value_or(partition::choose_grid(p.m, p.n, p.k, ranks));
  if (o.ranks_per_node < 0) throw InputError("--ranks-per-node must be at least 1");
  p.ranks_per_node = o.ranks_per_node >= ranks ? 0 : o.ranks_per_node;
  p.compression = o.compression.empty() ? "none" : o.compression;
  // Rank 0's share of this machine's cores, as a run here would give its pool.
  const int per_node = p.ranks_per_node > 0 ? p.ranks_per_node : ranks;
  p.compress_threads = io::compression_threads(p.compression, std::max(1, io::io_threads() / std::max(1, per_node)));
  return p;
}

}  // namespace

namespace {

// What a real run of one product would choose (algorithms/choice.hpp), assuming one GPU per rank.
struct Planned {
  algorithms::Problem problem;
  algorithms::MachineModel machine;
  algorithms::Choice choice;
  nlohmann::json settings;
};

// `jo`: `o` parsed (job::job_options).
Planned plan_one(const job::RunOptions& o, const job::JobOptions& jo, int ranks, const comm::NodeInfo& node) {
  const algorithms::Asked& asked = jo.asked;
  Planned at;
  at.problem = problem_of(o, jo, ranks);
  if (o.ranks == 0 && o.ranks_per_node == 0 && node.count > 1)
    at.problem.ranks_per_node = (ranks + node.count - 1) / node.count;
  at.machine = job::machine_model(jo);
  algorithms::Environment env = job::assumed_environment(asked);
  if (at.problem.compression != "none") env.in_place_write = false;  // rank 0 compresses and writes C
  at.choice = algorithms::choose(asked, at.problem, env, at.machine);
  at.settings = algorithms::make_algorithm(at.choice.algorithm)->describe(at.choice.setting);
  return at;
}

// Many products (job/launch.hpp): the list as the launch would run it, each product planned, the
// predicted times summed.
void plan_products(const job::RunOptions& o, int ranks, const comm::NodeInfo& node, DryRunPlan& plan) {
  const std::vector<job::Product> products = job::listed_products(o);
  (void)job::guard_launch_paths(o, products);
  std::string text = fmt::format(
      "products: {} (each planned as one run; C of a new file committed once, after the last)\n", products.size());
  text += fmt::format("{:>4}  {:<40} {:>17} {:<7} {:<8} {:>11}\n", "#", "A · B -> C", "m x n x k", "dtype", "algorithm",
                      "predicted s");
  nlohmann::json rows = nlohmann::json::array();
  double total = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    const job::RunOptions po = job::product_options(o, products[i]);
    const Planned at = plan_one(po, job::job_options(po), ranks, node);
    // The processes start once: the start-up is the first product's alone.
    const double seconds =
        at.choice.footprint.predicted_seconds() - (i > 0 ? at.choice.footprint.predicted.startup : 0);
    total += seconds;
    const algorithms::Problem& p = at.problem;
    text += fmt::format("{:>4}  {:<40} {:>17} {:<7} {:<8} {:>11.3f}\n", i + 1, po.a + " · " + po.b + " -> " + po.c,
                        fmt::format("{}x{}x{}", p.m, p.n, p.k), dtype_name(p.dtype), at.choice.algorithm, seconds);
    nlohmann::json row = products[i].to_json();
    row["shape"] = {{"m", p.m}, {"n", p.n}, {"k", p.k}};
    row["dtype"] = dtype_name(p.dtype);
    row["algorithm"] = at.choice.algorithm;
    row["predicted_seconds"] = seconds;
    rows.push_back(std::move(row));
  }
  text += fmt::format("total: predicted {:.3f} s over {} products (one start-up, then each product in turn)\n", total,
                      products.size());
  plan.text = text;
  nlohmann::json j = {{"schema", report::kDryRunSchema},
                      {"provenance", report::provenance()},
                      {"kind", "products"},
                      {"products", rows},
                      {"predicted_seconds", total}};
  plan.json = j.dump();
}

}  // namespace

DryRunPlan dry_run(const job::RunOptions& o, const comm::Comm& comm, bool print) {
  report::set_typed_options(job::typed_options(o));  // the report's options: typed
  // Planning for this job's own ranks across nodes: their layout, unless --ranks-per-node says.
  const comm::NodeInfo node = comm.node();
  DryRunPlan plan;
  comm.step([&] {
    if (comm.rank() != 0) return;
    if (o.ranks < 0) throw InputError("--ranks must be at least 1 (got " + std::to_string(o.ranks) + ")");
    const int ranks = o.ranks > 0 ? o.ranks : comm.size();
    if (ranks > 100000) throw InputError("--ranks " + std::to_string(ranks) + " is beyond 100,000");
    if (job::many_products(o)) {
      plan_products(o, ranks, node, plan);
      if (print) std::fputs(plan.text.c_str(), stdout);
      if (!o.report.empty()) io::write_file_replacing(o.report, nlohmann::json::parse(plan.json).dump(2) + "\n");
      return;
    }
    // The one rule for every path (job/job_paths.hpp), before anything else.
    const job::JobOptions jo = job::job_options(o);
    for (const auto& note : job::guard_run_paths(jo, job::Guarding::dry_run).notes)
      std::fprintf(stderr, "tessera: note: %s\n", note.c_str());
    const Planned at = plan_one(o, jo, ranks, node);
    const algorithms::Problem& p = at.problem;
    const algorithms::MachineModel& machine = at.machine;
    const algorithms::Choice& choice = at.choice;
    const nlohmann::json& settings = at.settings;
    plan.text = to_text(choice.footprint, choice.problem, machine.name, choice.why, settings);
    if (print) std::fputs(plan.text.c_str(), stdout);
    nlohmann::json j = {{"schema", report::kDryRunSchema}, {"provenance", report::provenance()}};
    j["provenance"]["inputs"] = nlohmann::json::array();
    if (jo.has_a() && jo.has_b())  // the files it was planned for, as found now
      for (const auto& [role, ref] : {std::pair{"a", &jo.a.ref}, std::pair{"b", &jo.b.ref}})
        j["provenance"]["inputs"].push_back(report::to_json(job::input_record(role, *ref)));
    j.update(to_json(choice.footprint, machine, choice.why, settings));
    j["shape"] = {{"m", p.m}, {"n", p.n}, {"k", p.k}};
    j["dtype"] = dtype_name(p.dtype);
    j["transpose_a"] = o.transpose_a;
    j["transpose_b"] = o.transpose_b;
    j["backend"] = choice.setting.gpu ? "cuda" : "cpu";
    if (!o.report.empty()) io::write_file_replacing(o.report, j.dump(2) + "\n");
    plan.json = j.dump();
  });
  plan.text = comm.broadcast(std::move(plan.text), 0);
  plan.json = comm.broadcast(std::move(plan.json), 0);
  return plan;
}

}  // namespace tessera::commands
