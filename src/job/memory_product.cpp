#include "job/memory_product.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "io/nonfinite.hpp"
#include "io/operand.hpp"
#include "job/result.hpp"

namespace tessera::job {

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::mutex& call_lock() {
  static std::mutex lock;
  return lock;
}

std::unique_ptr<backend::Backend>& kept_backend() {
  static std::unique_ptr<backend::Backend> kept;
  return kept;
}

// The kernel `asked` stands for on this shape ("auto": the tuned choice, whose table resolving
// reads from its file), once per backend kind, dtype and shape: a loop of products resolves once.
std::map<std::tuple<int, std::string, int, std::int64_t, std::int64_t, std::int64_t>, std::string>& resolved() {
  static std::map<std::tuple<int, std::string, int, std::int64_t, std::int64_t, std::int64_t>, std::string> kernels;
  return kernels;
}

std::string kernel_for(backend::Kind kind, const std::string& asked, DType dtype, std::int64_t m, std::int64_t n,
                       std::int64_t k) {
  const auto key = std::make_tuple(static_cast<int>(kind), asked, static_cast<int>(dtype), m, n, k);
  const auto found = resolved().find(key);
  if (found != resolved().end()) return found->second;
  // Over the process: its backend is kept from call to call, and a library's load serves them all.
  std::string kernel = backend::resolve_kernel(kind, asked, dtype, m, n, k, backend::LoadHorizon::process);
  backend::check_kernel(kind, kernel);
  return resolved()[key] = std::move(kernel);
}

std::string shape_of(std::int64_t rows, std::int64_t cols) { return fmt::format("{}x{}", rows, cols); }

void check_matrix(const MemoryMatrix& x, const char* name, bool written) {
  if (x.rows < 0 || x.cols < 0)
    throw InputError(fmt::format("{} is {}: a negative dimension", name, shape_of(x.rows, x.cols)));
  if (x.ld < x.cols)
    throw InputError(fmt::format("{}: its rows are {} elements apart, fewer than its {} columns", name, x.ld, x.cols));
  if (x.rows > 0 && x.cols > 0 && (written ? x.out == nullptr : x.data == nullptr))
    throw InputError(fmt::format("{} ({}) has no memory: a null pointer{}", name, shape_of(x.rows, x.cols),
                                 written && x.data != nullptr ? " to write to (C was described read-only)" : ""));
}

// NaN and Inf in a packed matrix, its rows split over threads of at least 4 MiB each (a 2048^2
// float32 matrix, 16 MiB, took 1.5 ms on one thread: as long as its copy to the GPU).
io::NonfiniteCount packed_nonfinite(const MemoryMatrix& x) {
  const std::size_t row_bytes = static_cast<std::size_t>(x.cols) * dtype_size(x.dtype);
  const std::size_t bytes = static_cast<std::size_t>(x.rows) * row_bytes;
  // hardware_concurrency() reads /sys at every call (10 us, most of a small product's): asked once.
  static const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<std::int64_t>(std::min<std::size_t>(
      {std::max<std::size_t>(bytes >> 22, 1), cores, static_cast<std::size_t>(std::max<std::int64_t>(x.rows, 1))}));
  std::vector<io::NonfiniteCount> parts(static_cast<std::size_t>(threads));
  const auto scan = [&](std::int64_t t) {
    const std::int64_t r0 = x.rows * t / threads, r1 = x.rows * (t + 1) / threads;
    parts[static_cast<std::size_t>(t)].add(
        static_cast<const unsigned char*>(x.data) + static_cast<std::size_t>(r0) * row_bytes, x.dtype, r1 - r0, x.cols,
        r0, 0, x.cols);
  };
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) pool.emplace_back(scan, t);
  scan(0);
  for (auto& th : pool) th.join();
  io::NonfiniteCount found;
  for (const auto& part : parts) found.merge(part);
  return found;
}

// Refuses NaN and Inf in `x` (stored coordinates), as a run refuses them in a file: a packed
// matrix over threads, rows apart one by one. A complex matrix is scanned as the real matrix of
// twice its columns that its parts make.
void refuse_nonfinite(const MemoryMatrix& complex_or_real, const char* name) {
  const int parts = is_complex(complex_or_real.dtype) ? 2 : 1;
  MemoryMatrix x = complex_or_real;
  x.dtype = real_of(x.dtype), x.cols *= parts, x.ld *= parts;
  io::NonfiniteCount found;
  if (x.ld == x.cols) {
    found = packed_nonfinite(x);
  } else {
    const std::size_t ld_bytes = static_cast<std::size_t>(x.ld) * dtype_size(x.dtype);
    for (std::int64_t r = 0; r < x.rows; ++r)
      found.add(static_cast<const unsigned char*>(x.data) + static_cast<std::size_t>(r) * ld_bytes, x.dtype, 1, x.cols,
                r, 0, x.cols);
  }
  if (found.count == 0) return;
  const auto first = static_cast<std::int64_t>(found.first);
  throw InputError(fmt::format(
      "{} holds {} non-finite value(s) (NaN/Inf){}, the first at ({}, {}); allow_nonfinite "
      "multiplies them",
      name, static_cast<long long>(found.count), parts == 2 ? " in its elements' real and imaginary parts" : "",
      first / std::max<std::int64_t>(x.cols, 1), first % std::max<std::int64_t>(x.cols, 1) / parts));
}

// op(X) as one contiguous row-major block: X's own memory where it is one (no copy), else a copy
// in `scratch` (rows packed, then transposed where op is the transpose).
const void* contiguous_op(const MemoryMatrix& x, bool transposed, std::vector<unsigned char>& scratch) {
  if (!transposed && x.ld == x.cols) return x.data;
  const std::size_t es = dtype_size(x.dtype), row = static_cast<std::size_t>(x.cols) * es;
  std::vector<unsigned char> rows(x.ld == x.cols ? 0 : static_cast<std::size_t>(x.rows) * row);
  for (std::int64_t r = 0; r < x.rows && !rows.empty(); ++r)
    std::memcpy(rows.data() + static_cast<std::size_t>(r) * row,
                static_cast<const unsigned char*>(x.data) + static_cast<std::size_t>(r * x.ld) * es, row);
  const void* from = rows.empty() ? x.data : rows.data();
  if (!transposed) {
    scratch = std::move(rows);
    return scratch.data();
  }
  scratch.resize(static_cast<std::size_t>(x.rows) * row);
  io::transpose(from, x.rows, x.cols, es, scratch.data());
  return scratch.data();
}

// C = alpha T + beta C, row by row (beta = 0: C is not read).
template <class T>
void combine(const T* t, const MemoryMatrix& c, double alpha, double beta) {
  for (std::int64_t i = 0; i < c.rows; ++i) {
    T* row = static_cast<T*>(c.out) + i * c.ld;
    const T* from = t + i * c.cols;
    for (std::int64_t j = 0; j < c.cols; ++j)
      row[j] = static_cast<T>(alpha * from[j] + (beta == 0 ? 0.0 : beta * static_cast<double>(row[j])));
  }
}

// The host's name, asked once a process (a loop of small products would make a system call each).
const std::string& host_name() {
  static const std::string name = [] {
    char text[256] = {};
    return ::gethostname(text, sizeof(text) - 1) == 0 ? std::string(text) : std::string();
  }();
  return name;
}

// A one-rank run's header (job_header), its operands named by where they are.
report::JobReport header(const JobOptions& o, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  report::JobReport job = job_header(o, 1);
  job.a = "memory: op(A) " + shape_of(m, k);
  job.b = "memory: op(B) " + shape_of(k, n);
  job.c = "memory: C " + shape_of(m, n);
  job.m = m, job.n = n, job.k = k;
  job.dtype = dtype_name(dtype);
  job.comm = "none";
  job.write = "into the caller's memory";
  return job;
}

// C = alpha op(A) op(B) + beta C as the backend's HeldProblem.
backend::HeldProblem held_problem(const JobOptions& o, const MemoryMatrix& a, const MemoryMatrix& b,
                                  const MemoryMatrix& c, const MemoryCall& call, std::int64_t m, std::int64_t n,
                                  std::int64_t k) {
  backend::HeldProblem p;
  p.dtype = a.dtype;
  p.m = m, p.n = n, p.k = k;
  p.a = {a.data, a.rows, a.cols, a.ld, a.device, o.a.transposed, o.conjugate_a};
  p.b = {b.data, b.rows, b.cols, b.ld, b.device, o.b.transposed, o.conjugate_b};
  p.c = c.out, p.ldc = c.ld, p.c_device = c.device;
  p.alpha = o.alpha, p.beta = o.beta;
  p.alpha_imag = o.alpha_imag, p.beta_imag = o.beta_imag;
  p.stream = call.stream, p.wait = call.wait;
  p.refuse_nonfinite = !o.allow_nonfinite;
  return p;
}

// The bytes a matrix spans, from its first element to one past its last.
std::pair<std::uintptr_t, std::uintptr_t> span_of(const MemoryMatrix& x, const void* at) {
  const auto from = reinterpret_cast<std::uintptr_t>(at);
  if (x.rows == 0 || x.cols == 0 || at == nullptr) return {from, from};
  return {from, from + static_cast<std::uintptr_t>(((x.rows - 1) * x.ld + x.cols)) * dtype_size(x.dtype)};
}

// C must not share memory with an operand: the product would read what it writes (CUDA's unified
// addressing keeps host and device addresses apart, so one comparison covers both).
void refuse_overlap(const MemoryMatrix& c, const MemoryMatrix& x, const char* name) {
  const auto [c0, c1] = span_of(c, c.out);
  const auto [x0, x1] = span_of(x, x.data);
  if (c0 < x1 && x0 < c1)
    throw InputError(fmt::format(
        "C shares memory with {}: the product would overwrite its own input; give C memory of its own", name));
}

// The report completed: backend, kernel, the one rank's record and the wall time.
report::JobReport finished(report::JobReport& job, report::RankRecord& me, const backend::Backend& be,
                           const std::string& kernel, double began) {
  me.warnings = be.warnings();
  job.backend = be.name();
  job.kernel = kernel;
  job.ranks = {std::move(me)};
  job.wall_seconds = now() - began;
  return std::move(job);
}

}  // namespace

report::JobReport multiply_in_memory(const JobOptions& o, const MemoryMatrix& a, const MemoryMatrix& b,
                                     const MemoryMatrix& c, const MemoryCall& call) {
  const std::lock_guard<std::mutex> lock(call_lock());
  const double began = now();
  check_matrix(a, "A", false);
  check_matrix(b, "B", false);
  check_matrix(c, "C", true);
  const DType dtype = a.dtype;
  if (b.dtype != dtype || c.dtype != dtype)
    throw InputError(fmt::format("A, B and C must hold one dtype; they hold {}, {} and {}", dtype_name(a.dtype),
                                 dtype_name(b.dtype), dtype_name(c.dtype)));
  if (o.asked.dtype && *o.asked.dtype != dtype)
    throw InputError(
        fmt::format("dtype {} asked, but the matrices hold {}", dtype_name(*o.asked.dtype), dtype_name(dtype)));
  const bool ta = o.a.transposed, tb = o.b.transposed;
  const std::int64_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  const std::int64_t kb = tb ? b.cols : b.rows, n = tb ? b.rows : b.cols;
  if (k != kb)
    throw InputError(
        fmt::format("inner dimensions disagree: op(A) is {} but op(B) is {} (A's columns must equal B's rows)",
                    shape_of(m, k), shape_of(kb, n)));
  if (c.rows != m || c.cols != n)
    throw InputError(fmt::format("C is {}, but op(A) op(B) is {}", shape_of(c.rows, c.cols), shape_of(m, n)));
  for (const double v : {o.alpha, o.beta, o.alpha_imag, o.beta_imag})
    if (!std::isfinite(v)) throw InputError(fmt::format("alpha and beta must be finite numbers (got {})", v));
  if (!is_complex(dtype) && (o.alpha_imag != 0 || o.beta_imag != 0))
    throw InputError(
        fmt::format("alpha and beta have imaginary parts ({}, {}), but the matrices hold {}: a "
                    "complex alpha or beta takes complex64 or complex128 matrices",
                    o.alpha_imag, o.beta_imag, dtype_name(dtype)));
  refuse_overlap(c, a, "A");
  refuse_overlap(c, b, "B");
  std::unique_ptr<backend::Backend>& be = kept_backend();
  // Matrices in GPU memory take the cuda backend, on the caller's current device (as a GPU
  // backend kept from earlier calls is, or it is made again on the device the caller moved to).
  const bool on_gpu = a.device || b.device || c.device;
  std::optional<backend::Kind> kind = o.asked.backend;
  if (!kind && on_gpu) kind = backend::Kind::cuda;
  const bool gpu_kept = be && be->kind() == backend::Kind::cuda;
  const int device = on_gpu || gpu_kept ? backend::current_gpu() : 0;
  if (!be || (kind && be->kind() != *kind) || (gpu_kept && be->device_id() != device))
    be = backend::make_backend(kind, {device, 1, static_cast<std::size_t>(o.asked.gpu_memory)});
  // Complex products run on the BLAS's own GEMM (cblas_cgemm/zgemm, cuBLAS's), where the matrices lie.
  const std::string blas = be->kind() == backend::Kind::cpu ? "openblas" : "cublas";
  if (is_complex(dtype) && o.asked.kernel != "auto" && o.asked.kernel != blas)
    throw InputError(
        fmt::format("kernel '{}' multiplies float32 and float64; {} products run on the {} backend's "
                    "BLAS ('{}', or 'auto')",
                    o.asked.kernel, dtype_name(dtype), be->name(), blas));
  const std::string kernel =
      is_complex(dtype) ? blas : kernel_for(be->kind(), o.asked.kernel, dtype, m, n, std::max<std::int64_t>(k, 1));
  const backend::HeldProblem held = held_problem(o, a, b, c, call, m, n, k);
  const bool in_place = be->holds_in_place(kernel, held);
  if (is_complex(dtype) && !in_place)
    throw InputError(
        fmt::format("a {}x{}x{} {} product is beyond the {} backend's BLAS (sizes and leading "
                    "dimensions below 2^31)",
                    m, n, k, dtype_name(dtype), be->name()));
  if (!in_place && (a.device || b.device || c.device))
    throw InputError(
        fmt::format("{} is in GPU memory, but the {} backend computes on the host (the GPU's memory is used "
                    "by the cuda backend only)",
                    a.device   ? "A"
                    : b.device ? "B"
                               : "C",
                    be->name()));
  // The CPU's BLAS multiplies in place but scans nothing: A and B are scanned here, as packed.
  if ((!in_place || be->kind() == backend::Kind::cpu) && !o.allow_nonfinite) {
    refuse_nonfinite(a, "A");
    refuse_nonfinite(b, "B");
  }

  report::JobReport job = header(o, dtype, m, n, k);
  for (const auto& [text, x] : {std::pair{&job.a, &a}, {&job.b, &b}, {&job.c, &c}})
    if (x->device) text->insert(0, "GPU ");
  report::RankRecord me;
  me.host = host_name();
  me.device = be->device();
  me.device_id = be->device_id();
  me.active = true;
  me.block_row = me.block_col = 0;
  me.row_end = m, me.col_end = n;
  me.flops = 2.0 * real_work(dtype) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (in_place) {
    const double t = now();
    const std::vector<backend::PhaseTime> phases = be->gemm_in_place(kernel, held);
    // Host matrices alone on a GPU report the phases of the copying path: read and write empty
    // (the GPU packs and scales), compute the whole GEMM with its h2d, kernel and d2h inside (the
    // CPU's BLAS reports its compute itself).
    const bool host_on_gpu = be->kind() == backend::Kind::cuda && !a.device && !b.device && !c.device;
    if (phases.empty()) me.phases.emplace_back("enqueue", now() - t);
    if (host_on_gpu) {
      me.phases.emplace_back("read", 0.0);
      me.phases.emplace_back("compute", now() - t);
    }
    for (const auto& phase : phases) me.phases.emplace_back(phase.name, phase.seconds);
    if (host_on_gpu) me.phases.emplace_back("write", 0.0);
    return finished(job, me, *be, kernel, began);
  }
  double t = now();
  std::vector<unsigned char> scratch_a, scratch_b, scratch_c;
  const void* pa = contiguous_op(a, ta, scratch_a);
  const void* pb = contiguous_op(b, tb, scratch_b);
  me.phases.emplace_back("read", now() - t);  // op(A), op(B) made contiguous (no copy where they are)
  const std::size_t es = dtype_size(dtype);
  const bool direct = o.alpha == 1 && o.beta == 0 && c.ld == n;
  if (!direct) scratch_c.resize(static_cast<std::size_t>(m * n) * es);
  void* into = direct ? c.out : scratch_c.data();
  if (m > 0 && n > 0 && k == 0) std::memset(into, 0, static_cast<std::size_t>(m * n) * es);
  t = now();
  std::vector<backend::PhaseTime> phases;
  if (m > 0 && n > 0 && k > 0) phases = be->gemm(kernel, {dtype, m, n, k, pa, pb, into});
  // The whole GEMM as "compute" (the CPU backend's one phase), a GPU's h2d, kernel and d2h inside it.
  if (std::none_of(phases.begin(), phases.end(), [](const backend::PhaseTime& p) { return p.name == "compute"; }))
    me.phases.emplace_back("compute", now() - t);
  for (const auto& phase : phases) me.phases.emplace_back(phase.name, phase.seconds);
  t = now();
  if (!direct && m > 0 && n > 0) {
    if (dtype == DType::f32)
      combine(reinterpret_cast<const float*>(scratch_c.data()), c, o.alpha, o.beta);
    else
      combine(reinterpret_cast<const double*>(scratch_c.data()), c, o.alpha, o.beta);
  }
  me.phases.emplace_back("write", now() - t);  // alpha, beta and C's leading dimension applied
  return finished(job, me, *be, kernel, began);
}

void release_memory_backend() {
  const std::lock_guard<std::mutex> lock(call_lock());
  kept_backend().reset();
  resolved().clear();
}

}  // namespace tessera::job
