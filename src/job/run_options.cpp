// The table of `tessera run`'s options (job/run_options.hpp), and the one check and conversion of
// each value typed as text.
#include "job/run_options.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <exception>

#include "algorithms/algorithm.hpp"
#include "algorithms/setting.hpp"
#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/dtype.hpp"
#include "core/words.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

namespace {

RunOption row(std::string name, OptionKind kind, Member member, std::string help) {
  RunOption r;
  r.name = std::move(name);
  r.kind = kind;
  r.member = member;
  r.help = std::move(help);
  return r;
}
RunOption text(std::string name, std::string RunOptions::*m, std::string help) {
  return row(std::move(name), OptionKind::text, m, std::move(help)).may_be_empty();
}
RunOption flag(std::string name, bool RunOptions::*m, std::string help) {
  return row(std::move(name), OptionKind::flag, m, std::move(help));
}
RunOption number(std::string name, double RunOptions::*m, std::string help) {
  return row(std::move(name), OptionKind::number, m, std::move(help)).shown();
}
template <class T>
RunOption integer(std::string name, T RunOptions::*m, std::string help, std::int64_t low,
                  std::int64_t high = std::numeric_limits<int>::max()) {
  RunOption r = row(std::move(name), OptionKind::integer, m, std::move(help));
  r.low = low, r.high = high;
  return r;
}
RunOption choice(std::string name, std::string RunOptions::*m, std::string help,
                 std::function<std::vector<std::string>()> words) {
  RunOption r = row(std::move(name), OptionKind::choice, m, std::move(help));
  r.choices = std::move(words);
  return r.shown().empty_is("auto");
}

// The words of each choice, from the layer that owns them.
std::vector<std::string> with_auto(std::vector<std::string> words) {
  words.insert(words.begin(), "auto");
  return words;
}
std::vector<std::string> every_kernel() {
  std::vector<std::string> names;
  for (const backend::KernelInfo& k : backend::kernel_catalog()) names.push_back(k.name);
  return names;
}
std::vector<std::string> kernel_words() { return with_auto(every_kernel()); }
std::vector<std::string> algorithm_words() { return with_auto(algorithms::algorithm_names()); }
std::vector<std::string> run_dtype_words() { return with_auto(dtype_words()); }
std::vector<std::string> progress_words() { return {"auto", "on", "off"}; }
std::vector<std::string> compression_words() { return {"none", "gzip", "lz4", "zstd", "bzip2"}; }
std::vector<std::string> c_dtype_words() { return {"auto", "f16", "bf16", "f32", "f64"}; }

std::vector<RunOption>& table() {
  static std::vector<RunOption> rows = {
      // Inputs, output, report.
      text("a", &RunOptions::a, "A (M x K) as FILE:/DATASET"),
      text("b", &RunOptions::b, "B (K x N) as FILE:/DATASET"),
      text("c", &RunOptions::c,
           "where to write C (M x N), FILE:/DATASET; or, with --overwrite, into a window of an existing dataset: "
           "FILE:/C[r0:r1, c0:c1], one matrix of a 3-D one FILE:/C[i] (docs/usage.md)"),
      text("manifest", &RunOptions::manifest,
           "many products in one launch: a TOML file of [[product]] tables (a, b, c; transpose-a, transpose-b, "
           "alpha, beta), instead of --a/--b/--c (docs/usage.md, \"Many products\")")
          .cli_only(),
      flag("keep-going", &RunOptions::keep_going,
           "many products: run the products after a failed one (the failed one is named, the others committed)"),
      text("report", &RunOptions::report,
           "write the JSON report here (schema: docs/report.md); '-': to stdout, the table then to stderr"),
      flag("overwrite", &RunOptions::overwrite,
           "replace an existing dataset at --c (an existing HDF5 file keeps its other datasets)"),
      flag("quiet", &RunOptions::quiet,
           "print no report table and no run lines (errors and warnings still go to stderr)")
          .also("-q"),
      choice("write", &RunOptions::write,
             "how C reaches the output: in-place (every rank writes its own rows), gather (rank 0 writes all) "
             "or auto (in place where every rank sees the output file)",
             algorithms::write_route_words),
      row("chunk", OptionKind::shape, &RunOptions::chunk,
          "C stored in chunks of RxC (a new dataset; default contiguous, or 256x256 where compressed)")
          .may_be_empty(),
      choice("c-dtype", &RunOptions::c_dtype,
             "what C is stored as: auto (float16 or bfloat16 when A and B both are, else the compute "
             "precision), f16, bf16, f32 or f64 (a new dataset; rounded to nearest)",
             c_dtype_words)
          .empty_is("auto"),
      choice("compression", &RunOptions::compression,
             "C compressed (chunked): gzip, lz4 or zstd (by tessera's threads on every core), bzip2 (HDF5's "
             "filter plugin, by rank 0), or none",
             compression_words)
          .empty_is("none"),
      integer("compression-level", &RunOptions::compression_level,
              "gzip's level, 1 (fastest) to 9, or zstd's, 1 to 22; 0: gzip 1, zstd 3", 0, 22)
          .shown(),
      flag("shuffle", &RunOptions::shuffle,
           "HDF5's shuffle filter before the compression (groups the floats' bytes: smaller files)"),
      flag("transpose-a", &RunOptions::transpose_a,
           "--a is stored K x M: use its transpose as A (read as such, the file is not copied)"),
      flag("transpose-b", &RunOptions::transpose_b, "--b is stored N x K: use its transpose as B"),
      flag("conjugate-a", &RunOptions::conjugate_a,
           "complex A: use the conjugate transpose of --a (stored K x M) as A, op(A) = A^H"),
      flag("conjugate-b", &RunOptions::conjugate_b,
           "complex B: use the conjugate transpose of --b (stored N x K) as B, op(B) = B^H"),
      number("alpha", &RunOptions::alpha, "C = alpha op(A) op(B) + beta C_old"),
      number("alpha-imag", &RunOptions::alpha_imag, "complex data: the imaginary part of alpha"),
      number("beta", &RunOptions::beta,
             "C = alpha op(A) op(B) + beta C_old; beta != 0 reads the existing C (--c, M x N) and needs "
             "--overwrite (not with --repeat > 1 or --warmup > 0)"),
      number("beta-imag", &RunOptions::beta_imag, "complex data: the imaginary part of beta (beta != 0 as for --beta)"),
      flag("verify", &RunOptions::verify, "check C with Freivalds' test (O(n^2)) before writing it; fail if wrong"),
      flag("allow-nonfinite", &RunOptions::allow_nonfinite, "multiply inputs holding NaN/Inf instead of refusing them"),
      flag("fail-on-nonfinite", &RunOptions::fail_on_nonfinite,
           "a C holding NaN/Inf (e.g. overflow) is an error and is not written (default: a warning)"),
      // What computes, and how.
      choice("algorithm", &RunOptions::algorithm,
             "panels (C blocks from whole A rows and B columns), summa (2-D blocks, panels of K broadcast along "
             "grid rows and columns), ksplit (K split, partials summed; NCCL on GPUs) or auto",
             algorithm_words),
      choice("comm", &RunOptions::comm,
             "summa/ksplit data path: nccl (GPU to GPU), cuda-aware (MPI on GPU memory, if the library reports "
             "it), host (MPI on pinned host memory) or auto (the first that applies)",
             comm::path_words),
      integer("panel-width", &RunOptions::panel_width, "summa: K panel width (0: 1024 on GPUs, 256 on CPUs)", 0,
              std::numeric_limits<std::int64_t>::max())
          .shown(),
      row("grid", OptionKind::shape, &RunOptions::grid,
          "process grid PRxPC (default: chosen from M, N, K and the rank count)")
          .may_be_empty(),
      choice("backend", &RunOptions::backend, "auto (GPU when visible), cpu or cuda", backend::backend_words),
      choice("kernel", &RunOptions::kernel,
             "a kernel of the backend (`tessera info` lists them, with their dtypes); auto: the backend's choice",
             kernel_words),
      choice("dtype", &RunOptions::dtype, "compute precision: auto (f32 if A and B are float32, else f64), f32, f64",
             run_dtype_words),
      choice("baseline", &RunOptions::baseline, "also time this kernel on each rank's block and report the speedup",
             every_kernel)
          .empty_is("")
          .may_be_empty(),
      choice("progress", &RunOptions::progress,
             "progress on stderr: auto (runs predicted over 5 s, and on a terminal any run past 3 s), on, off",
             progress_words)
          .empty_is("off"),
      row("gpu-memory", OptionKind::size, &RunOptions::gpu_memory,
          "GPU memory a rank may use (512M, 8G, ...); a block that needs more is computed out of core")
          .may_be_empty(),
      text("machine", &RunOptions::machine,
           "rates the model predicts with (auto's choice, --dry-run): a name in configs/machines (default, "
           "h200-2gpu) or a JSON file (default: $TESSERA_MACHINE_FILE, else default.json)"),
      integer("repeat", &RunOptions::repeat,
              "run the whole job (read, compute, write, commit) N times in this launch (N >= 1); the report "
              "gives the median, min and max of the runs and its table the last run (--dry-run ignores it)",
              1)
          .shown(),
      integer("warmup", &RunOptions::warmup,
              "whole runs (>= 0) before the --repeat ones, in no statistic of the report (default: 1 with "
              "--repeat > 1, else 0)",
              0),
      integer("timeout", &RunOptions::timeout,
              "a rank that waits longer than SECONDS in MPI for the others (their node lost) ends itself, "
              "rolling back the output; 0: never (default: 30 s + 10 x the predicted time of the run)",
              0),
      // The dry run.
      flag("dry-run", &RunOptions::dry_run, "print grid, memory, communication and predicted time; run nothing")
          .cli_only(),
      integer("m", &RunOptions::m, "--dry-run: rows of A and C (instead of --a/--b)", 1, INT64_MAX),
      integer("n", &RunOptions::n, "--dry-run: columns of B and C", 1, INT64_MAX),
      integer("k", &RunOptions::k, "--dry-run: columns of A, rows of B", 1, INT64_MAX),
      integer("ranks", &RunOptions::ranks, "--dry-run: plan for this many ranks (default: the job's)", 1),
      integer("ranks-per-node", &RunOptions::ranks_per_node,
              "--dry-run: on nodes of this many ranks each, placed in blocks (default: all on one node); "
              "messages between nodes at the machine file's internode rate",
              1),
  };
  return rows;
}

// A whole number in [low, high] written in decimal (no sign, no leading '+', no blank).
std::optional<std::int64_t> whole_number(const std::string& text, std::int64_t low, std::int64_t high) {
  if (text.empty() || text.find_first_not_of("0123456789-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE || x < low || x > high) return std::nullopt;
  return x;
}

std::optional<double> finite_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x) || (errno == ERANGE && x == 0))
    return std::nullopt;
  return x;
}

std::optional<bool> truth(const std::string& text) {
  for (const char* yes : {"true", "1", "on", "yes"})
    if (text == yes) return true;
  for (const char* no : {"false", "0", "off", "no"})
    if (text == no) return false;
  return std::nullopt;
}

}  // namespace

const std::vector<RunOption>& run_options() { return table(); }

const RunOption* find_run_option(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const RunOption& r : table())
    if (r.name == name || r.name == dashed) return &r;
  return nullptr;
}

const std::vector<std::string>& choices_of(const RunOption& r) {
  static const std::vector<std::string> kNone;
  if (!r.choices || !r.choice_words) return kNone;
  ChoiceWords& w = *r.choice_words;
  std::call_once(w.listed, [&] { w.words = r.choices(); });
  return w.words;
}

namespace {
// The row's value where it is text (a string member or a registered row's), else nullptr.
const std::string* text_of(const RunOptions& o, const RunOption& r) {
  if (const auto* member = std::get_if<std::string RunOptions::*>(&r.member)) return &(o.**member);
  if (std::holds_alternative<ExtraValue>(r.member)) {
    const auto found = o.extra.find(r.name);
    return found == o.extra.end() ? nullptr : &found->second;
  }
  return nullptr;
}
}  // namespace

std::string check_value(const RunOption& r, const std::string& value) {
  if (value.empty() && r.optional) return {};
  const auto option = [&r] { return "--" + r.name; };
  switch (r.kind) {
    case OptionKind::text:
      return {};
    case OptionKind::choice: {
      const std::vector<std::string>& words = choices_of(r);
      if (std::find(words.begin(), words.end(), value) != words.end()) return {};
      return not_one_of(value, words);
    }
    case OptionKind::shape:
      try {
        (void)partition::parse_grid(value, option());
        return {};
      } catch (const InputError& e) {
        return e.what();
      }
    case OptionKind::size:
      try {
        (void)parse_bytes(value, option().c_str());
        return {};
      } catch (const InputError& e) {
        return e.what();
      }
    case OptionKind::integer:
      if (whole_number(value, r.low, r.high)) return {};
      return "must be a whole number from " + std::to_string(r.low) + " to " + std::to_string(r.high) + ", not '" +
             value + "'";
    case OptionKind::number:
      return finite_number(value) ? std::string() : "must be a finite number, not '" + value + "'";
    case OptionKind::flag:
      return truth(value) ? std::string() : "must be true or false, not '" + value + "'";
  }
  return {};
}

void set_value(RunOptions& o, const RunOption& r, const std::string& given) {
  const std::string value = given.empty() && !r.empty_means.empty() ? r.empty_means : given;
  if (const std::string why = check_value(r, value); !why.empty()) throw OptionError("--" + r.name + ": " + why);
  std::visit(
      [&](auto member) {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, ExtraValue>) {
          o.extra[r.name] = value;
        } else if constexpr (std::is_same_v<M, std::string RunOptions::*>) {
          o.*member = value;
        } else if constexpr (std::is_same_v<M, bool RunOptions::*>) {
          o.*member = *truth(value);
        } else if constexpr (std::is_same_v<M, double RunOptions::*>) {
          o.*member = *finite_number(value);
        } else if constexpr (std::is_same_v<M, std::optional<int> RunOptions::*>) {
          o.*member = static_cast<int>(*whole_number(value, r.low, r.high));
        } else {
          o.*member = static_cast<std::remove_reference_t<decltype(o.*member)>>(*whole_number(value, r.low, r.high));
        }
      },
      r.member);
}

nlohmann::json get_value(const RunOptions& o, const RunOption& r) {
  return std::visit(
      [&](auto member) -> nlohmann::json {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, ExtraValue>) {
          const auto found = o.extra.find(r.name);
          return found == o.extra.end() ? nlohmann::json(nullptr) : nlohmann::json(found->second);
        } else if constexpr (std::is_same_v<M, std::optional<int> RunOptions::*>) {
          return o.*member ? nlohmann::json(*(o.*member)) : nlohmann::json(nullptr);
        } else {
          return o.*member;
        }
      },
      r.member);
}

nlohmann::json typed_options(const RunOptions& o) {
  nlohmann::json t = nlohmann::json::object();
  for (const RunOption& r : table())
    if (nlohmann::json v = get_value(o, r); !v.is_null()) t[r.name] = std::move(v);
  t["config"] = o.config;
  return t;
}

void check_run_options(const RunOptions& o) {
  for (const RunOption& r : table()) {
    const std::string* v = text_of(o, r);
    if (v == nullptr) continue;
    if (const std::string why = check_value(r, *v); !why.empty()) throw OptionError("--" + r.name + ": " + why);
  }
  // A kernel named for a backend named: one of that backend's (a build without CUDA lists none).
  const std::optional<backend::Kind> kind = backend::parse_kind(o.backend);
  if (!kind) return;
  const std::vector<std::string> names = backend::kernel_names(*kind);
  for (const auto& [option, name] : {std::pair{"--kernel", &o.kernel}, std::pair{"--baseline", &o.baseline}}) {
    if (names.empty() || name->empty() || *name == "auto") continue;
    if (std::find(names.begin(), names.end(), *name) == names.end())
      throw OptionError(std::string(option) + ": " + not_one_of(*name, names) + " (the kernels of --backend " +
                        o.backend + ")");
  }
}

RunOptionRegistration::RunOptionRegistration(RunOption r) {
  r.member = ExtraValue{};
  table().push_back(std::move(r));
}

namespace {
constexpr double kBytesPerGiB = 1024.0 * 1024 * 1024;
}  // namespace

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
    scale = kBytesPerGiB;
  else if (unit == "T" || unit == "TiB")
    scale = kBytesPerGiB * 1024;
  if (used == 0 || scale == 0 || !(value > 0))
    throw InputError(std::string("invalid ") + option + " '" + text + "': expected a size like 512M, 8G or 1.5G");
  return static_cast<std::size_t>(value * scale);
}

}  // namespace tessera::job
