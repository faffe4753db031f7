// GPU kernels and the CUDA backend against a float64 CPU reference. Every kernel of the
// registry is tested, so a kernel added there is tested here without a new line.
//
// Tags: [gpu] on every case (each SKIPs, visibly, when no GPU is visible); [small] on the
// cases cheap enough for compute-sanitizer; hidden [.] cases are run by hand:
//   tessera_gpu_tests "[huge]"      M or N above 2^31 (16 GiB of device memory, ~1 min)
//   tessera_gpu_tests "[pinning]"   pageable vs registered host copies, timed
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda_backend.hpp"
#include "backend/gpu_telemetry.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "io/nonfinite.hpp"
#include "io/stored_type.hpp"
#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"
#include "kernels/gpu_layout.hpp"
#include "kernels/tail_split.hpp"

namespace {

using namespace tessera;
using kernels::DeviceBuffer;
using kernels::GpuContext;
using kernels::GpuGemm;
using kernels::Stream;

struct Shape {
  std::int64_t m, n, k;
};

std::string shape_str(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::f32 : DType::f64;
}

// Uniform in [-1, 1), rounded to T: random, signed, never all zeros.
template <class T>
std::vector<T> random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> x(static_cast<std::size_t>(rows * cols));
  for (T& v : x) v = static_cast<T>(dist(rng));
  return x;
}

// C = A * B in float64, row-major: textbook loops for small problems, OpenBLAS dgemm for large.
void reference_gemm(const Shape& s, const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c) {
  c.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  if (static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) > 1e7) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                static_cast<int>(s.k), 1.0, a.data(), static_cast<int>(s.k), b.data(), static_cast<int>(s.n), 0.0,
                c.data(), static_cast<int>(s.n));
    return;
  }
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t p = 0; p < s.k; ++p) {
      const double aip = a[static_cast<std::size_t>(i * s.k + p)];
      for (std::int64_t j = 0; j < s.n; ++j)
        c[static_cast<std::size_t>(i * s.n + j)] += aip * b[static_cast<std::size_t>(p * s.n + j)];
    }
}

// The inputs of one problem in T, and what every kernel's output is compared with: the exact
// product up to float64 rounding, and |A| |B| for the error bound.
template <class T>
struct Problem {
  Shape shape;
  std::vector<T> a, b;
  std::vector<double> ref, abs_ref;

  Problem(const Shape& s, std::uint64_t seed) : shape(s) {
    std::mt19937_64 rng(seed);
    a = random_matrix<T>(s.m, s.k, rng);
    b = random_matrix<T>(s.k, s.n, rng);
    std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());  // exact upcast
    reference_gemm(s, a64, b64, ref);
    for (double& v : a64) v = std::fabs(v);
    for (double& v : b64) v = std::fabs(v);
    reference_gemm(s, a64, b64, abs_ref);
  }
};

// Copies and fills ordered on `stream` with the kernels, finished on return.
template <class T>
std::vector<T> to_host(const DeviceBuffer& d, std::size_t count, const Stream& stream) {
  std::vector<T> x(count);
  CUDA_CHECK(cudaMemcpyAsync(x.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return x;
}

void to_device(const DeviceBuffer& d, const void* host, const Stream& stream) {
  CUDA_CHECK(cudaMemcpyAsync(d.get(), host, d.bytes(), cudaMemcpyHostToDevice, stream.get()));
  stream.synchronize();
}

// All-ones bits: NaN in float and double, so an element a kernel never writes fails.
void poison(const DeviceBuffer& d, const Stream& stream) {
  CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream.get()));
}

// The problem as `kernel` takes it: GpuGemm::inputs of its kind (float32 A and B rounded to BF16
// for cublas-bf16-stored, which multiplies BF16-stored data).
GpuGemm as_taken_by(const std::string& kernel, GpuGemm g) {
  kernels::GpuKernelTraits traits;
  if (kernels::gpu_kernel_traits(kernel, &traits)) g.inputs = traits.inputs;
  return g;
}

// Runs `kernel` on the device with C poisoned with NaN first.
template <class T>
std::vector<T> run_kernel(const std::string& kernel, const Problem<T>& p, GpuContext& ctx, const Stream& stream) {
  const Shape& s = p.shape;
  DeviceBuffer a(p.a.size() * sizeof(T), "A"), b(p.b.size() * sizeof(T), "B");
  DeviceBuffer c(static_cast<std::size_t>(s.m * s.n) * sizeof(T), "C");
  to_device(a, p.a.data(), stream);
  to_device(b, p.b.data(), stream);
  poison(c, stream);
  GpuGemm g = as_taken_by(kernel, {dtype_of<T>(), s.m, s.n, s.k, a.get(), b.get(), c.get(), stream.get()});
  DeviceBuffer a16, b16;
  if (g.inputs == kernels::InputStorage::bf16) {
    a16 = DeviceBuffer(p.a.size() * 2, "A (BF16)");
    b16 = DeviceBuffer(p.b.size() * 2, "B (BF16)");
    kernels::gpu_round_to_bf16(static_cast<const float*>(a.get()), a16.get(), s.m * s.k, stream.get());
    kernels::gpu_round_to_bf16(static_cast<const float*>(b.get()), b16.get(), s.k * s.n, stream.get());
    g.a = a16.get();
    g.b = b16.get();
  }
  kernels::gpu_gemm(kernel, g, ctx);
  return to_host<T>(c, static_cast<std::size_t>(s.m * s.n), stream);
}

// Elementwise |C - Cref| <= (2 bound + gamma_k(f64)) (|A| |B|)_ij, with `bound` the kernel's
// componentwise forward-error bound (kernels::gpu_error_bound): gamma_k(T) for a length-k dot
// product in T; for tensor-core kernels that round the inputs to TF32/BF16 (unit roundoff u_in)
// 2 u_in + u_in^2 + gamma_k(f32) (1 + u_in)^2. A safety factor of 2 (it also covers tensor cores
// whose adders truncate rather than round), plus the reference's own rounding.
// Returns "" when every element is within, else a description of the first one that is not.
template <class T>
std::string compare(const std::vector<T>& c, const Problem<T>& p, const std::string& kernel) {
  const double gamma =
      2 * kernels::gpu_error_bound(kernel, dtype_of<T>(), p.shape.k) + gamma_bound(DType::f64, p.shape.k);
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double err = std::fabs(static_cast<double>(c[i]) - p.ref[i]);
    if (!(err <= gamma * p.abs_ref[i])) {  // also catches NaN
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return "";
  const auto n = static_cast<std::size_t>(p.shape.n);
  std::ostringstream out;
  out.precision(10);
  out << bad << " of " << c.size() << " elements out of bounds; first C(" << first / n << ", " << first % n
      << ") = " << c[first] << ", reference " << p.ref[first] << ", allowed error " << gamma * p.abs_ref[first];
  return out.str();
}

// The registry's kernels, or those named in $TESSERA_TEST_KERNELS (comma-separated; unknown
// names are reported by the dispatcher): lets the sanitizer runs take only the new kernels.
std::vector<std::string> kernels_under_test() {
  const std::vector<std::string> all = kernels::gpu_kernel_names();
  const char* env = std::getenv("TESSERA_TEST_KERNELS");
  if (!env || !*env) return all;
  std::vector<std::string> chosen;
  std::stringstream list(env);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) chosen.push_back(name);
  return chosen;
}

template <class T>
void check_every_kernel(const Shape& s) {
  const Problem<T> p(s, 0x7e55e7a + static_cast<std::uint64_t>(s.m * 31 + s.n * 7 + s.k));
  GpuContext ctx;
  Stream stream;
  for (const std::string& kernel : kernels_under_test()) {
    INFO("kernel " << kernel << ", " << dtype_name(dtype_of<T>()) << ", " << shape_str(s));
    std::string why;
    if (!kernels::gpu_can_implement(kernel, as_taken_by(kernel, GpuGemm{dtype_of<T>(), s.m, s.n, s.k}), &why)) {
      WARN("kernel " << kernel << " cannot run " << shape_str(s) << ": " << why);
      continue;
    }
    const std::vector<T> c = run_kernel<T>(kernel, p, ctx, stream);
    CHECK(compare(c, p, kernel) == "");
  }
}

void check_every_kernel(const Shape& s, DType dtype) {
  if (dtype == DType::f32)
    check_every_kernel<float>(s);
  else
    check_every_kernel<double>(s);
}

// An environment variable as it was before the test, restored however the test case ends (a
// failed REQUIRE throws past the end of a loop).
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    const char* was = std::getenv(name);
    if (was) was_ = was;
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (was_)
      ::setenv(name_, was_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> was_;
};

}  // namespace

// The one case that runs without a GPU: CI has neither GPU nor driver, and asking must be safe.
TEST_CASE("cuda_device_count answers without throwing with or without a GPU", "[gpu][small]") {
  int count = -1;
  REQUIRE_NOTHROW(count = backend::cuda_device_count());
  CHECK(count >= 0);
  std::vector<std::string> lines;
  REQUIRE_NOTHROW(lines = backend::cuda_describe_devices());
  CHECK(lines.size() == static_cast<std::size_t>(count));
  for (const std::string& line : lines) CHECK(line.find("(sm_") != std::string::npos);
}

TEST_CASE("every GPU kernel matches a float64 reference on small and odd shapes", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Shape shape = GENERATE(values<Shape>({
      {1, 1, 1},
      {17, 33, 9},
      {1000, 1, 1000},
      {1, 1000, 1000},
      {65, 130, 67},
      {130, 132, 36},   // N, K multiples of 4: the 16-byte paths, with partial edge tiles
      {200, 68, 260},   // several k blocks through the cp.async pipeline, aligned rows
      {67, 131, 100},   // several k blocks, unaligned rows (scalar copies of B)
      {2100000, 3, 2},  // more row tiles than gridDim.y allows (65535): the kernels must stride
  }));
  const DType dtype = GENERATE(DType::f32, DType::f64);
  check_every_kernel(shape, dtype);
}

// The odd shapes without the 2.1M-row one: small enough for compute-sanitizer's racecheck,
// which instruments every shared-memory access (scripts/gpu.sh check runs this case).
TEST_CASE("every GPU kernel matches a float64 reference under the sanitizers", "[gpu][sanitize]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Shape shape = GENERATE(values<Shape>({
      {1, 1, 1},
      {17, 33, 9},
      {65, 130, 67},
      {130, 132, 36},
      {67, 131, 100},
      {200, 68, 260},
  }));
  const DType dtype = GENERATE(DType::f32, DType::f64);
  check_every_kernel(shape, dtype);
}

TEST_CASE("every GPU kernel matches a float64 reference on large shapes", "[gpu][large]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Shape shape = GENERATE(values<Shape>({
      {1023, 1025, 1027},
      {2048, 2048, 2048},
      {1024, 1028, 1032},
      {3001, 2999, 301},  // more tiles than SMs: the persistent kernels take several, and their
                          // stage ring wraps around from one tile to the next
  }));
  const DType dtype = GENERATE(DType::f32, DType::f64);
  check_every_kernel(shape, dtype);
}

TEST_CASE("k = 0 makes C zero and an empty C is left alone", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  GpuContext ctx;
  Stream stream;
  for (const std::string& kernel : kernels::gpu_kernel_names()) {
    INFO("kernel " << kernel);
    DeviceBuffer c(6 * sizeof(double), "C");
    poison(c, stream);
    const GpuGemm no_k{DType::f64, 2, 3, 0, nullptr, nullptr, c.get(), stream.get()};
    kernels::gpu_gemm(kernel, no_k, ctx);
    CHECK(to_host<double>(c, 6, stream) == std::vector<double>(6, 0.0));
    CHECK_NOTHROW(
        kernels::gpu_gemm(kernel, GpuGemm{DType::f64, 0, 3, 5, nullptr, nullptr, nullptr, stream.get()}, ctx));
  }
}

// C = A[:, :k1] B[:k1, :], then C += A[:, k1:] B[k1:, :] with GpuGemm::accumulate: natively
// (cuBLAS beta = 1) or through the dispatcher's scratch C. Any summation order of the K products
// keeps the gamma_k bound, so the reference and bound of the whole product apply.
template <class T>
void check_accumulate(const Shape& s, std::int64_t k1) {
  const Problem<T> p(s, 0xacc + static_cast<std::uint64_t>(s.m + s.n + s.k));
  const std::int64_t k2 = s.k - k1;
  std::vector<T> a1(static_cast<std::size_t>(s.m * k1)), a2(static_cast<std::size_t>(s.m * k2));
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t q = 0; q < s.k; ++q)
      (q < k1 ? a1[static_cast<std::size_t>(i * k1 + q)] : a2[static_cast<std::size_t>(i * k2 + q - k1)]) =
          p.a[static_cast<std::size_t>(i * s.k + q)];
  GpuContext ctx;
  Stream stream;
  DeviceBuffer da1(a1.size() * sizeof(T), "A1"), da2(a2.size() * sizeof(T), "A2");
  DeviceBuffer db(p.b.size() * sizeof(T), "B"), dc(static_cast<std::size_t>(s.m * s.n) * sizeof(T), "C");
  if (da1.bytes()) to_device(da1, a1.data(), stream);
  if (da2.bytes()) to_device(da2, a2.data(), stream);
  to_device(db, p.b.data(), stream);
  const auto* b2 = static_cast<const unsigned char*>(db.get()) + static_cast<std::size_t>(k1 * s.n) * sizeof(T);
  for (const std::string& kernel : kernels_under_test()) {
    INFO("kernel " << kernel << ", " << dtype_name(dtype_of<T>()) << ", " << shape_str(s) << ", k1 = " << k1);
    if (!kernels::gpu_can_implement(kernel, GpuGemm{dtype_of<T>(), s.m, s.n, s.k})) continue;
    poison(dc, stream);
    kernels::gpu_gemm(kernel, GpuGemm{dtype_of<T>(), s.m, s.n, k1, da1.get(), db.get(), dc.get(), stream.get()}, ctx);
    GpuGemm second{dtype_of<T>(), s.m, s.n, k2, da2.get(), b2, dc.get(), stream.get()};
    second.accumulate = true;
    kernels::gpu_gemm(kernel, second, ctx);
    CHECK(compare(to_host<T>(dc, static_cast<std::size_t>(s.m * s.n), stream), p, kernel) == "");
  }
}

TEST_CASE("every GPU kernel accumulates: C += A * B", "[gpu][small][summa]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  check_accumulate<float>({65, 130, 67}, 30);
  check_accumulate<double>({65, 130, 67}, 30);
  check_accumulate<float>({17, 33, 9}, 9);  // the second product has k = 0: C unchanged
  check_accumulate<double>({1, 1, 2}, 1);
}

// C += A * B on a random nonzero C: the epilogues that read C (warptile's, cuBLAS's beta = 1)
// and the dispatcher's scratch C for the others. C0 + sum_p a_ip b_pj is a dot product of
// length k + 1 (C0 times 1 as one more term), so the reference is C0 + A B and the bound that of
// a length-(k + 1) product on |C0| + |A| |B|.
template <class T>
void check_accumulate_into(const Shape& s) {
  const auto seed = 0xbe7a1 + static_cast<std::uint64_t>(s.m * 31 + s.n * 7 + s.k);
  Problem<T> p(s, seed);
  std::mt19937_64 rng(seed + 1);
  const std::vector<T> c0 = random_matrix<T>(s.m, s.n, rng);
  for (std::size_t i = 0; i < c0.size(); ++i) {
    p.ref[i] += c0[i];
    p.abs_ref[i] += std::fabs(static_cast<double>(c0[i]));
  }
  p.shape.k = s.k + 1;  // what compare() takes the bound of
  GpuContext ctx;
  Stream stream;
  DeviceBuffer a(p.a.size() * sizeof(T), "A"), b(p.b.size() * sizeof(T), "B");
  DeviceBuffer c(c0.size() * sizeof(T), "C");
  to_device(a, p.a.data(), stream);
  to_device(b, p.b.data(), stream);
  for (const std::string& kernel : kernels_under_test()) {
    INFO("kernel " << kernel << ", " << dtype_name(dtype_of<T>()) << ", " << shape_str(s));
    GpuGemm g{dtype_of<T>(), s.m, s.n, s.k, a.get(), b.get(), c.get(), stream.get()};
    g.accumulate = true;
    if (!kernels::gpu_can_implement(kernel, g)) continue;
    to_device(c, c0.data(), stream);
    kernels::gpu_gemm(kernel, g, ctx);
    CHECK(compare(to_host<T>(c, c0.size(), stream), p, kernel) == "");
  }
}

TEST_CASE("C += A * B adds into a random C on odd shapes", "[gpu][small][summa]") {
  // The warptile and tensor-core kernels add in their epilogue, so the dispatcher gives them C.
  for (const std::string kernel : {"warptile-128x128", "warptile-128x64", "warptile-64x64", "warptile-128x128-staged",
                                   "warptile-128x256-16x8-staged-tail", "dmma", "tf32", "bf16"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    REQUIRE(kernels::gpu_kernel_traits(kernel, &traits));
    CHECK(traits.accumulates);
  }
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Shape shape = GENERATE(values<Shape>({
      {1, 1, 1},
      {37, 53, 29},
      {131, 257, 67},   // partial tiles, several k blocks, unaligned rows (scalar paths)
      {129, 260, 33},   // N a multiple of 4: the 16-byte loads and stores of C, partial tiles
      {131, 257, 200},  // 13 k blocks: the -tail kernels split K (in 3) and sum onto C
  }));
  const DType dtype = GENERATE(DType::f32, DType::f64);
  if (dtype == DType::f32)
    check_accumulate_into<float>(shape);
  else
    check_accumulate_into<double>(shape);
}

// Host only: kernels/tail_split.hpp's plan. 33 x 17 tiles (4099 x 4097 in 128 x 256) on 132 SMs:
// 4.25 waves; the 31 rows inside the first 4 waves run as they are, the last 2 rows (34 tiles)
// with K in 3 (102 blocks). Whole waves, a tail that would not fit one wave split in two, or a
// short K: no split. Fewer tiles than a wave: all of them split.
TEST_CASE("the tail split fills the last wave and leaves whole waves alone", "[gpu][small]") {
  using kernels::plan_tail_split;
  const auto plan = [](std::int64_t tm, std::int64_t tn, std::int64_t kb, std::int64_t slots) {
    const kernels::TailSplit t = plan_tail_split(tm, tn, kb, slots);
    return std::vector<std::int64_t>{t.main_rows, t.splits};
  };
  CHECK(plan(33, 17, 256, 132) == std::vector<std::int64_t>{31, 3});  // 128x256 at 4099 x 4097 x 4095
  CHECK(plan(33, 33, 256, 264) == std::vector<std::int64_t>{32, 8});  // 128x128, 2 blocks per SM
  CHECK(plan(17, 17, 65, 264) == std::vector<std::int64_t>{15, 7});   // the GPU test below, 128x128
  CHECK(plan(17, 9, 65, 132) == std::vector<std::int64_t>{14, 4});    // and 128x256
  CHECK(plan(32, 16, 256, 132) == std::vector<std::int64_t>{32, 1});  // 4096^3: a 128-tile tail, no room to split
  CHECK(plan(12, 11, 256, 132) == std::vector<std::int64_t>{12, 1});  // whole waves
  CHECK(plan(33, 17, 7, 132) == std::vector<std::int64_t>{33, 1});    // K too short to split
  CHECK(plan(2, 1, 17, 264) == std::vector<std::int64_t>{0, 4});      // one partial wave: all split
  CHECK(plan(8, 9, 1000, 264) == std::vector<std::int64_t>{0, 3});
  CHECK(plan(1, 1, 1, 132) == std::vector<std::int64_t>{1, 1});
  CHECK(plan(1, 1000, 64, 132) == std::vector<std::int64_t>{1, 1});  // a row wider than the whole waves
  for (std::int64_t tm = 1; tm <= 40; ++tm)
    for (std::int64_t tn = 1; tn <= 40; ++tn) {
      const kernels::TailSplit t = plan_tail_split(tm, tn, 64, 132);
      INFO(tm << " x " << tn << " tiles");
      CHECK(t.splits >= 1);
      CHECK(t.splits <= kernels::kTailMaxSplits);
      CHECK(t.main_rows >= 0);
      CHECK(t.main_rows <= tm);
      if (t.splits == 1) CHECK(t.main_rows == tm);
      if (t.splits > 1) CHECK((tm - t.main_rows) * tn * t.splits <= 132);  // the tail fits one wave
      if (t.splits > 1) CHECK(t.main_rows * tn <= (tm * tn / 132) * 132);  // the rest in whole waves
    }
}

// The staged kernels on problems large enough to stage (m n k >= 2^30), each with several waves
// of tiles and a tail the -tail kernels split (K = 1031: 65 k blocks, not a multiple of the split;
// on 132 SMs 128x128 splits 2 of 17 tile rows in 7, 128x256 3 of 17 in 4). Three paths: N % 4 != 0
// (B and C staged), N % 4 == 0 with B one float off 16-byte alignment (B staged, C not), aligned
// (nothing staged); as C = A B and C += A B on a random C; and every result bitwise the same when
// run again (no atomics anywhere).
template <class T>
void check_split_kernels(const Shape& s, std::int64_t b_offset, bool accumulate, const std::string& tag) {
  Problem<T> p(s, 0x57a6ed + static_cast<std::uint64_t>(s.n + b_offset));
  std::mt19937_64 rng(7);
  const std::vector<T> c0 = accumulate ? random_matrix<T>(s.m, s.n, rng) : std::vector<T>{};
  for (std::size_t i = 0; i < c0.size(); ++i) {  // as in check_accumulate_into: a length-(k + 1) sum
    p.ref[i] += c0[i];
    p.abs_ref[i] += std::fabs(static_cast<double>(c0[i]));
  }
  if (accumulate) p.shape.k = s.k + 1;
  GpuContext ctx;
  Stream stream;
  DeviceBuffer a(p.a.size() * sizeof(T), "A"), b((p.b.size() + 4) * sizeof(T), "B");
  DeviceBuffer c(static_cast<std::size_t>(s.m * s.n) * sizeof(T), "C");
  to_device(a, p.a.data(), stream);
  T* const b_at = b.as<T>() + b_offset;
  CUDA_CHECK(cudaMemcpyAsync(b_at, p.b.data(), p.b.size() * sizeof(T), cudaMemcpyHostToDevice, stream.get()));
  const auto run = [&](const std::string& kernel) {
    GpuGemm g{dtype_of<T>(), s.m, s.n, s.k, a.get(), b_at, c.get(), stream.get()};
    g.accumulate = accumulate;
    if (accumulate)
      to_device(c, c0.data(), stream);
    else
      poison(c, stream);
    kernels::gpu_gemm(kernel, g, ctx);
    return to_host<T>(c, static_cast<std::size_t>(s.m * s.n), stream);
  };
  int tested = 0;
  for (const std::string& kernel : kernels::gpu_kernel_names()) {
    if (kernel.find(tag) == std::string::npos) continue;
    INFO("kernel " << kernel << ", " << shape_str(s) << ", B " << b_offset << " elements in"
                   << (accumulate ? ", C += A B" : ""));
    const std::vector<T> first = run(kernel);
    CHECK(compare(first, p, kernel) == "");
    CHECK(run(kernel) == first);
    ++tested;
  }
  CHECK(tested >= 2);
}

void check_staged(const Shape& s, std::int64_t b_offset, bool accumulate) {
  check_split_kernels<float>(s, b_offset, accumulate, "-staged");
}

TEST_CASE("the staged warptile kernels stage B and C and split the last wave's tiles along K", "[gpu][large]") {
  // Host only: the names are registered, float32 only, adding into C themselves.
  for (const std::string kernel : {"warptile-128x128-staged", "warptile-128x128-staged-tail",
                                   "warptile-128x256-16x8-staged", "warptile-128x256-16x8-staged-tail"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    REQUIRE(kernels::gpu_kernel_traits(kernel, &traits));
    CHECK(traits.accumulates);
    CHECK_FALSE(traits.opt_in);
    CHECK(kernels::gpu_can_implement(kernel, GpuGemm{DType::f32, 8, 8, 8}));
    CHECK_FALSE(kernels::gpu_can_implement(kernel, GpuGemm{DType::f64, 8, 8, 8}));
  }
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // 128x256 runs one block per SM: the shape below splits its tail on this GPU too.
  CHECK(kernels::plan_tail_split(17, 9, 65, sms).splits > 1);
  check_staged({2051, 2049, 1031}, 0, false);
  check_staged({2051, 2049, 1031}, 0, true);
  check_staged({2051, 2052, 1031}, 1, true);
  check_staged({2051, 2052, 1031}, 0, false);
}

// Host only: kernels/tail_split.hpp's stream-K plan. The figures of the benchmarks (132 SMs):
// 4096^3 in 128 x 128 x 32 tiles is 1024 tiles, 7 waves and 100 tail tiles of 128 k blocks,
// shared by 132 blocks (97 each); 8192^3 a tail of 4 tiles; 128 x 64 tiles, 2 blocks per SM, a
// tail of 200. Whole waves, a tail too close to a whole wave, or too few k blocks: no stream-K.
// For every plan, the ranges cover each tail iteration once, each range is shorter than a tile and
// at least kStreamKMinIters long, and the fixup's contributor arithmetic (block_of, slot) agrees
// with the ranges.
TEST_CASE("stream-K shares the tail's k blocks in ranges that cover each once", "[gpu][small]") {
  using kernels::plan_stream_k;
  const auto plan = [](std::int64_t tiles, std::int64_t kb, std::int64_t slots) {
    const kernels::StreamKPlan p = plan_stream_k(tiles, kb, slots);
    return std::vector<std::int64_t>{p.dp_tiles, p.sk_blocks};
  };
  CHECK(plan(1024, 128, 132) == std::vector<std::int64_t>{924, 132});
  CHECK(plan(4096, 256, 132) == std::vector<std::int64_t>{4092, 132});
  CHECK(plan(16384, 512, 132) == std::vector<std::int64_t>{16368, 132});
  CHECK(plan(2048, 256, 264) == std::vector<std::int64_t>{1848, 264});
  CHECK(plan(1056, 64, 132) == std::vector<std::int64_t>{1056, 0});  // whole waves
  CHECK(plan(130, 64, 132) == std::vector<std::int64_t>{130, 0});    // 130 of 132: saves under 1/8 tile
  CHECK(plan(5, 1, 132) == std::vector<std::int64_t>{5, 0});         // K too short
  CHECK(plan(4, 17, 264) == std::vector<std::int64_t>{0, 17});       // fewer tiles than a wave: all shared
  CHECK(plan(1, 1, 132) == std::vector<std::int64_t>{1, 0});
  for (const std::int64_t slots : {std::int64_t{132}, std::int64_t{264}, std::int64_t{7}})
    for (std::int64_t tiles = 1; tiles <= 300; tiles += 7)
      for (const std::int64_t kb : {std::int64_t{1}, std::int64_t{3}, std::int64_t{17}, std::int64_t{128}}) {
        const kernels::StreamKPlan p = plan_stream_k(tiles, kb, slots);
        INFO(tiles << " tiles of " << kb << " k blocks on " << slots << " slots");
        CHECK(p.tiles == tiles);
        CHECK(p.dp_tiles + (p.sk_blocks > 0 ? tiles % slots : 0) == tiles);
        if (p.sk_blocks == 0) continue;
        CHECK(p.sk_blocks <= slots);
        CHECK(p.sk_blocks > tiles - p.dp_tiles);
        CHECK(p.begin(0) == p.dp_tiles * kb);
        CHECK(p.begin(p.sk_blocks) == tiles * kb);
        std::vector<int> slot_uses(static_cast<std::size_t>(p.slots()), 0);
        for (std::int64_t j = 0; j < p.sk_blocks; ++j) {
          const std::int64_t len = p.begin(j + 1) - p.begin(j);
          CHECK(len >= kernels::kStreamKMinIters);
          CHECK(len <= kb);
          for (std::int64_t i = p.begin(j); i < p.begin(j + 1); ++i) CHECK(p.block_of(i) == j);
        }
        for (std::int64_t tile = p.dp_tiles; tile < tiles; ++tile) {
          std::int64_t covered = 0;
          for (std::int64_t j = p.block_of(tile * kb); j <= p.block_of((tile + 1) * kb - 1); ++j) {
            const std::int64_t lo = std::max(p.begin(j), tile * kb), hi = std::min(p.begin(j + 1), (tile + 1) * kb);
            CHECK(hi > lo);
            covered += hi - lo;
            const std::int64_t slot = p.slot(j, tile);
            REQUIRE(slot >= 0);
            REQUIRE(slot < p.slots());
            ++slot_uses[static_cast<std::size_t>(slot)];
          }
          CHECK(covered == kb);
        }
        for (const int uses : slot_uses) CHECK(uses <= 1);
      }
}

// The stream-K float64 kernels with several waves and a tail on this GPU (K = 1031: 33 k blocks of
// 32, 65 of 16; K = 1024), on aligned rows and with B one double off 16-byte alignment (8-byte
// copies), as C = A B and C += A B on a random C, each bitwise the same when run again.
TEST_CASE("the stream-K dmma kernels share the last wave's tiles and sum them in a fixed order", "[gpu][large]") {
  for (const std::string kernel : {"dmma8-sk", "dmma8-128x128-k32-sk"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    REQUIRE(kernels::gpu_kernel_traits(kernel, &traits));
    CHECK(traits.accumulates);
    CHECK_FALSE(kernels::gpu_can_implement(kernel, GpuGemm{DType::f32, 8, 8, 8}));
  }
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // 17 x 17 tiles of 128 x 128 on one block per SM, 17 x 33 of 128 x 64 on two: both have a tail.
  CHECK(kernels::plan_stream_k(17 * 17, 33, sms).sk_blocks > 0);
  CHECK(kernels::plan_stream_k(17 * 33, 65, 2 * sms).sk_blocks > 0);
  check_split_kernels<double>({2051, 2049, 1031}, 0, false, "-sk");
  check_split_kernels<double>({2051, 2050, 1031}, 0, true, "-sk");
  check_split_kernels<double>({2051, 2050, 1031}, 1, true, "-sk");
  // K a multiple of 32 and 16-byte rows: the 16-byte copies of A, and ranges on interior tiles
  // without checks (16 x 17 and 16 x 34 tiles: tails of 8 and 16 on the H200; 32 and 64 k blocks).
  check_split_kernels<double>({2048, 2176, 1024}, 0, false, "-sk");
  check_split_kernels<double>({2048, 2176, 1024}, 0, true, "-sk");
}

// SUMMA's panel product on one GPU: panels staged from a host block (strided), or uploaded
// from the slot's staging, two slots in turn, summed on the device, against the reference.
TEST_CASE("the cuda backend's panel product sums panels of K", "[gpu][small][summa]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  using Panel = backend::PanelProduct::Panel;
  auto cuda = backend::make_cuda_backend({0, 1});
  const Shape s{67, 45, 101};
  const Problem<double> p(s, 7);
  // A backend takes resolved names only: auto is resolved first (backend::resolve_kernel).
  const std::string resolved = backend::resolve_kernel(backend::Kind::cuda, "auto", DType::f64, s.m, s.n, s.k);
  for (const std::string& kernel : {resolved, std::string("warptile-64x64"), std::string("cublas")}) {
    for (const std::int64_t w : {std::int64_t{1}, std::int64_t{16}, std::int64_t{101}}) {
      INFO("kernel " << kernel << ", panel width " << w);
      std::vector<double> c(static_cast<std::size_t>(s.m * s.n), 0.0);
      auto product = cuda->panel_product(kernel, DType::f64, s.m, s.n, w, c.data(), true);
      int slot = 0;
      for (std::int64_t k0 = 0; k0 < s.k; k0 += w, slot ^= 1) {
        const std::int64_t width = std::min(w, s.k - k0);
        product->wait_slot(slot);
        product->stage(slot, Panel::kA, p.a.data() + k0, s.k, s.m, width);  // columns k0.. of A
        // B's rows through the slot's staging, as a receiving rank's would come.
        std::copy_n(p.b.data() + k0 * s.n, width * s.n, static_cast<double*>(product->host(slot, Panel::kB)));
        product->upload(slot, Panel::kB, width * s.n);
        product->multiply(slot, width);
      }
      const auto phases = product->finish();
      CHECK(compare(c, p, kernel) == "");
      for (const auto& ph : phases) CHECK(ph.seconds >= 0);
    }
  }
  std::vector<double> c(1);
  CHECK_THROWS_AS(
      cuda->panel_product("cublas", DType::f64, std::int64_t{1} << 20, std::int64_t{1} << 20, 1, c.data(), true),
      DeviceError);  // 8 TiB of C: refused up front, saying what the panel product needs
}

// The comm layer's hook into a slot (PanelProduct::transfer, how NCCL broadcasts): device work
// enqueued in the slot's order, after the multiply that last read the slot and before the next.
// Here the work is a copy from page-locked host memory standing in for a broadcast; C is then
// read back from device_c() (where summa's gather sends it from) as well as from the host C.
TEST_CASE("the panel product runs device transfers in the slot's order", "[gpu][small][summa]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  using Panel = backend::PanelProduct::Panel;
  auto cuda = backend::make_cuda_backend({0, 1});
  const Shape s{67, 45, 101};
  const Problem<double> p(s, 11);
  const std::int64_t w = 16;
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n), 0.0);
  auto product = cuda->panel_product("tiled32", DType::f64, s.m, s.n, w, c.data(), false);
  CHECK_THROWS(product->host(0, Panel::kB));  // no host staging asked for
  auto b_rows = cuda->allocate_host(p.b.size() * sizeof(double));
  std::copy(p.b.begin(), p.b.end(), reinterpret_cast<double*>(b_rows.data()));
  int slot = 0;
  for (std::int64_t k0 = 0; k0 < s.k; k0 += w, slot ^= 1) {
    const std::int64_t width = std::min(w, s.k - k0);
    product->wait_slot(slot);
    product->stage(slot, Panel::kA, p.a.data() + k0, s.k, s.m, width);
    void* into = product->device(slot, Panel::kB);
    const void* from = b_rows.data() + static_cast<std::size_t>(k0 * s.n) * sizeof(double);
    const std::size_t bytes = static_cast<std::size_t>(width * s.n) * sizeof(double);
    product->transfer(slot, [&](void* stream) {
      CUDA_CHECK(cudaMemcpyAsync(into, from, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
    });
    product->multiply(slot, width);
  }
  const auto phases = product->finish();
  CHECK(compare(c, p, "tiled32") == "");
  bool timed = false;
  for (const auto& ph : phases) timed = timed || (ph.name == "bcast" && ph.seconds > 0);
  CHECK(timed);
  std::vector<double> on_device(c.size());
  CUDA_CHECK(cudaMemcpy(on_device.data(), product->device_c(), c.size() * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(on_device == c);
}

// ksplit's product kept on the device (Backend::gemm_on_device): in one piece and in chunks of
// K; a transfer on it (how NCCL sums it) runs after the product and is timed under its name; the
// copy down happens where a host C is given.
TEST_CASE("the cuda backend keeps a product on the device for the comm layer", "[gpu][small][ksplit]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  auto cuda = backend::make_cuda_backend({0, 1});
  for (const Shape s : {Shape{37, 29, 53}, Shape{33, 31, backend::kKeptChunkMinK + 3}, Shape{5, 7, 0}}) {
    INFO(shape_str(s));
    const Problem<double> p({s.m, s.n, std::max<std::int64_t>(s.k, 1)}, 5);
    std::vector<double> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<double>::quiet_NaN());
    const backend::GemmProblem prob{DType::f64, s.m, s.n, s.k, p.a.data(), p.b.data(), c.data()};
    auto kept = cuda->gemm_on_device("tiled32", prob);
    const auto computed = kept->compute_phases();
    REQUIRE(computed.size() == 2);
    CHECK(computed[0].name == "h2d");
    CHECK(computed[1].name == "kernel");
    DeviceBuffer copy(c.size() * sizeof(double), "copy of C");
    kept->transfer("reduce", [&](void* stream) {
      CUDA_CHECK(cudaMemcpyAsync(copy.get(), kept->device_c(), copy.bytes(), cudaMemcpyDeviceToDevice,
                                 static_cast<cudaStream_t>(stream)));
    });
    const auto phases = kept->finish(c.data());
    REQUIRE(phases.size() == 2);
    CHECK(phases[0].name == "reduce");
    CHECK(phases[1].name == "d2h");
    std::vector<double> copied(c.size());
    CUDA_CHECK(cudaMemcpy(copied.data(), copy.get(), copy.bytes(), cudaMemcpyDeviceToHost));
    if (s.k == 0) {
      CHECK(c == std::vector<double>(c.size(), 0.0));  // an empty K range contributes zeros
    } else {
      CHECK(compare(c, p, "tiled32") == "");
    }
    CHECK(copied == c);
  }
  CHECK_THROWS_AS(backend::make_backend(backend::Kind::cpu, {})->gemm_on_device("auto", {}), tessera::Error);
}

TEST_CASE("unknown kernels and unsupported sizes are refused with InputError", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  GpuContext ctx;
  const GpuGemm tiny{DType::f32, 1, 1, 1};
  std::string why;
  CHECK_FALSE(kernels::gpu_can_implement("no-such-kernel", tiny, &why));
  CHECK(why.find("no-such-kernel") != std::string::npos);
  CHECK_THROWS_AS(kernels::gpu_gemm("no-such-kernel", tiny, ctx), InputError);

  // cuBLAS takes int sizes: refused before anything is launched (no buffers needed).
  const GpuGemm tall{DType::f32, std::int64_t{1} << 31, 1, 1};
  CHECK_FALSE(kernels::gpu_can_implement("cublas", tall, &why));
  CHECK(why.find("2^31") != std::string::npos);
  CHECK_THROWS_AS(kernels::gpu_gemm("cublas", tall, ctx), InputError);
  CHECK(kernels::gpu_can_implement("tiled32", tall));
  CHECK_FALSE(kernels::gpu_can_implement("tiled32", GpuGemm{DType::f32, -1, 1, 1}));

  auto cuda = backend::make_cuda_backend({0, 1});
  std::vector<float> a(1, 1.0f), b(1, 2.0f), c(1);
  const backend::GemmProblem p{DType::f32, 1, 1, 1, a.data(), b.data(), c.data()};
  CHECK_THROWS_AS(cuda->gemm("no-such-kernel", p), InputError);
  // "auto" is the job's to resolve (backend::resolve_kernel), never a backend's: refused by name.
  try {
    cuda->gemm("auto", p);
    FAIL("the cuda backend took the unresolved name auto");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("'auto'") != std::string::npos);
  }
}

// A float32 C stored as a 16-bit float leaves the staged GEMM rounded on the GPU
// (StagedProblem::c_rounded): bit for bit what the host's conversion (io::convert_block) makes of
// the same C as computed, overflow to Inf and the product's own NaN and Inf included; in pieces of
// one row or less and with remainders, and every row handed over once, in order.
TEST_CASE("the staged GEMM rounds a 16-bit C on the GPU as the host would", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  auto cuda = backend::make_cuda_backend({0, 1});
  const ScopedEnv stage_bytes("TESSERA_STAGE_BYTES");
  for (const Shape s : {Shape{1, 1, 1}, Shape{37, 29, 53}, Shape{300, 257, 64}, Shape{129, 1, 7}})
    for (const char* piece : {"6", "1000", "33554432"}) {
      INFO(shape_str(s) << ", pieces of " << piece << " bytes");
      ::setenv("TESSERA_STAGE_BYTES", piece, 1);
      Problem<float> p(s, 11);
      // Row 0 of C beyond FP16's 65504 (at least 5e5 - k: A(0, 0) = 1e6 and B's row 0 in
      // [0.5, 1)), within BF16's range; a NaN and an Inf in A where there are rows enough.
      p.a[0] = 1.0e6f;
      for (std::int64_t c = 0; c < s.n; ++c)
        p.b[static_cast<std::size_t>(c)] = 0.5f + 0.5f * std::fabs(p.b[static_cast<std::size_t>(c)]);
      if (s.m > 2) {
        p.a[static_cast<std::size_t>(1 * s.k)] = std::numeric_limits<float>::quiet_NaN();
        p.a[static_cast<std::size_t>(2 * s.k)] = std::numeric_limits<float>::infinity();
      }
      const auto run = [&](backend::StagedProblem::Rounded rounded, std::size_t esize) {
        std::vector<unsigned char> c(static_cast<std::size_t>(s.m * s.n) * esize, 0xA5);
        std::int64_t next = 0;
        backend::StagedProblem sp;
        sp.dtype = DType::f32;
        sp.m = s.m, sp.n = s.n, sp.k = s.k;
        sp.fill_a = [&](std::int64_t r0, std::int64_t rows, void* into) {
          std::memcpy(into, p.a.data() + r0 * s.k, static_cast<std::size_t>(rows * s.k) * sizeof(float));
        };
        sp.fill_b = [&](std::int64_t r0, std::int64_t rows, void* into) {
          std::memcpy(into, p.b.data() + r0 * s.n, static_cast<std::size_t>(rows * s.n) * sizeof(float));
        };
        const auto take = [&](std::int64_t r0, std::int64_t rows, const void* from) {
          CHECK(r0 == next);
          next = r0 + rows;
          std::memcpy(c.data() + static_cast<std::size_t>(r0 * s.n) * esize, from,
                      static_cast<std::size_t>(rows * s.n) * esize);
        };
        if (rounded == backend::StagedProblem::Rounded::none) {
          sp.take_c = take;
        } else {
          sp.take_c = [](std::int64_t, std::int64_t, const void*) { FAIL("C came back as computed"); };
          sp.c_rounded = rounded;
          sp.take_c_rounded = take;
        }
        REQUIRE(cuda->stages(DType::f32, s.m, s.n, s.k));
        const auto phases = cuda->gemm_staged("tiled32", sp);
        CHECK(next == s.m);
        const bool timed_rounding = std::any_of(phases.begin(), phases.end(), [](const backend::PhaseTime& t) {
          return t.name == "round C";
        });
        CHECK(timed_rounding == (rounded != backend::StagedProblem::Rounded::none));
        return c;
      };
      const std::vector<unsigned char> computed = run(backend::StagedProblem::Rounded::none, sizeof(float));
      for (const io::Stored stored : {io::Stored::f16, io::Stored::bf16}) {
        INFO(io::stored_word(stored));
        std::vector<std::uint16_t> expected(static_cast<std::size_t>(s.m * s.n));
        io::NonfiniteCount overflow;
        io::convert_block(computed.data(), DType::f32, s.m, s.n, stored, expected.data(), &overflow, 0, 0, s.n);
        const std::vector<unsigned char> got = run(
            stored == io::Stored::f16 ? backend::StagedProblem::Rounded::f16 : backend::StagedProblem::Rounded::bf16, 2);
        const std::uint16_t exponent = stored == io::Stored::f16 ? 0x7c00u : 0x7f80u;
        std::int64_t differ = 0, nans = 0, infs = 0;
        for (std::size_t i = 0; i < expected.size(); ++i) {
          std::uint16_t g = 0;
          std::memcpy(&g, got.data() + 2 * i, 2);
          const std::uint16_t e = expected[i];
          const bool nan_e = (e & exponent) == exponent && (e & ~exponent & 0x7fffu) != 0;
          const bool nan_g = (g & exponent) == exponent && (g & ~exponent & 0x7fffu) != 0;
          if (nan_e) ++nans;
          if ((e & 0x7fffu) == exponent) ++infs;
          if (nan_e ? !nan_g : g != e) ++differ;  // (a NaN's payload may differ)
        }
        CHECK(differ == 0);
        CHECK(infs >= (stored == io::Stored::f16 ? s.n : 0));  // row 0 overflows FP16
        CHECK((overflow.count > 0) == (stored == io::Stored::f16));
        if (s.m > 2) {
          CHECK(nans > 0);  // row 1
          CHECK(infs > 0);  // row 2
        }
        // What the writer counts of the rounded block: the product's NaN and Inf and the overflow.
        io::NonfiniteCount as_stored;
        as_stored.add_half(got.data(), stored == io::Stored::bf16, s.m, s.n, 0, 0, s.n);
        io::NonfiniteCount as_computed = io::count_nonfinite(computed.data(), DType::f32, s.m, s.n, 0, 0, s.n);
        as_computed.merge(overflow);
        CHECK(as_stored.count == as_computed.count);
        CHECK(as_stored.first == as_computed.first);
      }
    }
}

// A and B stored as a 16-bit float, for the kernel that rounds to it (cublas-f16 / cublas-bf16):
// the staged GEMM asks for them as stored (fill_a_half / fill_b_half, never fill_a / fill_b),
// uploads the 2-byte values and multiplies them as they are, within the kernel's bound of the
// float64 product and as the float32 route computes them; for any other kernel it asks for float32.
TEST_CASE("the staged GEMM multiplies half-precision operands as stored", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  auto cuda = backend::make_cuda_backend({0, 1});
  const ScopedEnv stage_bytes("TESSERA_STAGE_BYTES");
  for (const io::Stored stored : {io::Stored::f16, io::Stored::bf16})
    for (const Shape s : {Shape{1, 1, 1}, Shape{37, 29, 1}, Shape{300, 257, 611}})
      for (const char* piece : {"5", "33554432"}) {
        INFO(io::stored_word(stored) << " " << shape_str(s) << ", pieces of " << piece << " bytes");
        ::setenv("TESSERA_STAGE_BYTES", piece, 1);
        const Problem<float> p(s, 23);
        // The operands as stored (rounded once) and their exact float32 values.
        const auto halve = [&](const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
          std::vector<std::uint16_t> h(x.size());
          io::convert_block(x.data(), DType::f32, rows, cols, stored, h.data(), nullptr, 0, 0, cols);
          return h;
        };
        const std::vector<std::uint16_t> a16 = halve(p.a, s.m, s.k), b16 = halve(p.b, s.k, s.n);
        std::vector<float> a(a16.size()), b(b16.size());
        io::widen_half(a16.data(), a16.size(), stored, DType::f32, a.data());
        io::widen_half(b16.data(), b16.size(), stored, DType::f32, b.data());
        const std::string kernel = stored == io::Stored::f16 ? "cublas-f16" : "cublas-bf16";
        const auto rows_of = [](const auto& x, std::int64_t width) {
          return [&x, width](std::int64_t r0, std::int64_t rows, void* into) {
            std::memcpy(into, x.data() + r0 * width, static_cast<std::size_t>(rows * width) * sizeof(x[0]));
          };
        };
        int widened = 0, as_stored = 0;
        const auto run = [&](const std::string& name, bool offer_halves) {
          std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
          backend::StagedProblem sp;
          sp.dtype = DType::f32;
          sp.m = s.m, sp.n = s.n, sp.k = s.k;
          const auto fill_a = rows_of(a, s.k), fill_b = rows_of(b, s.n);
          const auto fill_a16 = rows_of(a16, s.k), fill_b16 = rows_of(b16, s.n);
          sp.fill_a = [&](std::int64_t r0, std::int64_t rows, void* into) { ++widened, fill_a(r0, rows, into); };
          sp.fill_b = [&](std::int64_t r0, std::int64_t rows, void* into) { ++widened, fill_b(r0, rows, into); };
          if (offer_halves) {
            sp.operands = stored == io::Stored::f16 ? backend::StagedProblem::Rounded::f16
                                                    : backend::StagedProblem::Rounded::bf16;
            sp.fill_a_half = [&](std::int64_t r0, std::int64_t rows, void* into) { ++as_stored, fill_a16(r0, rows, into); };
            sp.fill_b_half = [&](std::int64_t r0, std::int64_t rows, void* into) { ++as_stored, fill_b16(r0, rows, into); };
          }
          sp.take_c = [&](std::int64_t r0, std::int64_t rows, const void* from) {
            std::memcpy(c.data() + r0 * s.n, from, static_cast<std::size_t>(rows * s.n) * sizeof(float));
          };
          REQUIRE(cuda->stages(DType::f32, s.m, s.n, s.k));
          cuda->gemm_staged(name, sp);
          return c;
        };
        const std::vector<float> via_float = run(kernel, false);
        CHECK((widened > 0 && as_stored == 0));
        widened = 0;
        const std::vector<float> via_halves = run(kernel, true);
        CHECK(widened == 0);
        CHECK(as_stored > 0);
        as_stored = 0;
        const std::vector<float> other = run("tiled32", true);  // (rounds nothing: takes float32)
        CHECK(as_stored == 0);
        CHECK(widened > 0);
        // Against the float64 product of the stored values: K products exact in FP32, FP32 sums.
        double worst = 0, worst_vs_float = 0, worst_other = 0;
        for (std::int64_t i = 0; i < s.m; ++i)
          for (std::int64_t j = 0; j < s.n; ++j) {
            double ref = 0, mag = 0;
            for (std::int64_t l = 0; l < s.k; ++l) {
              const double x = static_cast<double>(a[static_cast<std::size_t>(i * s.k + l)]) *
                               b[static_cast<std::size_t>(l * s.n + j)];
              ref += x;
              mag += std::fabs(x);
            }
            const std::size_t at = static_cast<std::size_t>(i * s.n + j);
            const double scale = std::max(mag, 1e-30);
            worst = std::max(worst, std::fabs(via_halves[at] - ref) / scale);
            worst_vs_float = std::max(worst_vs_float, std::fabs(via_halves[at] - via_float[at]) / scale);
            worst_other = std::max(worst_other, std::fabs(other[at] - ref) / scale);
          }
        const double bound = 4.0 * static_cast<double>(s.k + 2) * 0x1p-24;
        CHECK(worst <= bound);
        CHECK(worst_vs_float <= 2 * bound);
        CHECK(worst_other <= bound);
      }
}

TEST_CASE("the cuda backend computes through the Backend interface and times its phases", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  auto cuda = backend::make_cuda_backend({0, 1});
  CHECK(cuda->name() == "cuda");
  CHECK(cuda->device_id() == 0);
  CHECK(cuda->device().find('[') != std::string::npos);  // "NAME [pci bus id]"
  CHECK(cuda->warnings().empty());
  // auto: a full-precision kernel (tessera's own or cuBLAS's), never a reduced-precision one.
  const std::vector<std::string> full = kernels::gpu_auto_candidates();
  CHECK(std::find(full.begin(), full.end(), cuda->default_kernel()) != full.end());
  const std::vector<std::string> names = cuda->kernels();
  REQUIRE(names.front() == cuda->default_kernel());
  CHECK(names.size() == kernels::gpu_kernel_names().size());

  const Shape s{65, 33, 47};
  const Problem<double> p64(s, 1);
  const Problem<float> p32(s, 2);
  for (const std::string& kernel : names) {
    INFO("kernel " << kernel);
    const std::string& bound_of = kernel;
    if (kernels::gpu_can_implement(kernel, GpuGemm{DType::f64, s.m, s.n, s.k})) {
      std::vector<double> c64(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<double>::quiet_NaN());
      const auto phases = cuda->gemm(kernel, {DType::f64, s.m, s.n, s.k, p64.a.data(), p64.b.data(), c64.data()});
      REQUIRE(phases.size() == 3);
      CHECK(phases[0].name == "h2d");
      CHECK(phases[1].name == "kernel");
      CHECK(phases[2].name == "d2h");
      for (const auto& phase : phases) CHECK(phase.seconds >= 0);
      CHECK(compare(c64, p64, bound_of) == "");
    }
    if (kernels::gpu_can_implement(kernel, GpuGemm{DType::f32, s.m, s.n, s.k})) {
      std::vector<float> c32(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
      cuda->gemm(kernel, {DType::f32, s.m, s.n, s.k, p32.a.data(), p32.b.data(), c32.data()});
      CHECK(compare(c32, p32, bound_of) == "");
    }
  }
}

TEST_CASE("tensor-core kernels are opt-in, float32 only, and carry their input precision", "[gpu][small]") {
  const std::vector<std::string> full = kernels::gpu_auto_candidates();
  for (const std::string kernel : {"tf32", "bf16", "cublas-tf32", "cublas-bf16", "cublas-f16", "cublas-bf16-stored"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    REQUIRE(kernels::gpu_kernel_traits(kernel, &traits));
    CHECK(traits.opt_in);
    CHECK(traits.input_unit_roundoff > 0);
    CHECK(std::find(full.begin(), full.end(), kernel) == full.end());
  }
  kernels::GpuKernelTraits tf32, bf16;
  REQUIRE(kernels::gpu_kernel_traits("tf32", &tf32));
  REQUIRE(kernels::gpu_kernel_traits("bf16", &bf16));
  CHECK(tf32.input_unit_roundoff == 0x1p-11);
  CHECK(bf16.input_unit_roundoff == 0x1p-8);
  CHECK_FALSE(tf32.vendor);
  std::string why;
  CHECK_FALSE(kernels::gpu_can_implement("tf32", GpuGemm{DType::f64, 8, 8, 8}, &why));
  CHECK(why.find("float32") != std::string::npos);
  CHECK_FALSE(kernels::gpu_can_implement("dmma", GpuGemm{DType::f32, 8, 8, 8}, &why));
  CHECK(kernels::gpu_error_bound("tf32", DType::f32, 100) > kernels::gpu_error_bound("tiled32", DType::f32, 100));
  CHECK(kernels::gpu_error_bound("tiled32", DType::f64, 100) == gamma_bound(DType::f64, 100));
}

// Host only: the cuBLAS calls as the registry describes them (the bench's baselines, auto's candidate).
TEST_CASE("the cuBLAS calls: full precision for auto, the reduced-precision ones opt-in", "[gpu][small]") {
  const std::vector<std::string> full = kernels::gpu_auto_candidates();
  kernels::GpuKernelTraits cublas;
  REQUIRE(kernels::gpu_kernel_traits("cublas", &cublas));
  CHECK(cublas.vendor);
  CHECK_FALSE(cublas.opt_in);
  CHECK(cublas.input_unit_roundoff == 0);
  CHECK(std::find(full.begin(), full.end(), "cublas") != full.end());
  for (const std::string kernel : {"cublas-tf32", "cublas-bf16", "cublas-f16", "cublas-bf16-stored"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    REQUIRE(kernels::gpu_kernel_traits(kernel, &traits));
    CHECK(traits.vendor);
    CHECK(traits.accumulates);
    CHECK(traits.inputs ==
          (kernel == "cublas-bf16-stored" ? kernels::InputStorage::bf16 : kernels::InputStorage::dtype));
  }
  // BF16-stored inputs only for the one call that takes them, and it takes nothing else.
  std::string why;
  GpuGemm stored{DType::f32, 8, 8, 8};
  stored.inputs = kernels::InputStorage::bf16;
  CHECK(kernels::gpu_can_implement("cublas-bf16-stored", stored));
  CHECK_FALSE(kernels::gpu_can_implement("cublas-bf16", stored, &why));
  CHECK_FALSE(kernels::gpu_can_implement("cublas-bf16-stored", GpuGemm{DType::f32, 8, 8, 8}, &why));
  CHECK(why.find("BF16") != std::string::npos);
  CHECK(kernels::gpu_can_implement("cublas-bf16-stored", GpuGemm{DType::f32, 0, 8, 8}));  // nothing to read
}

// Host only. The wgmma kernels exist in builds with sm_90a code (TESSERA_WITH_SM90A) only.
TEST_CASE("wgmma kernels are opt-in and float32 only", "[gpu][small]") {
  const std::vector<std::string> own = kernels::gpu_auto_candidates();
  for (const std::string kernel : {"tf32-wgmma", "tf32-wgmma-128x128", "bf16-wgmma", "bf16-wgmma-128x128"}) {
    INFO("kernel " << kernel);
    kernels::GpuKernelTraits traits;
    if (!kernels::gpu_kernel_traits(kernel, &traits)) continue;  // not in this build
    const bool tf32 = kernel.rfind("tf32", 0) == 0;
    CHECK(traits.opt_in);
    CHECK(traits.accumulates);
    CHECK(std::find(own.begin(), own.end(), kernel) == own.end());
    CHECK_FALSE(traits.vendor);
    CHECK(traits.input_unit_roundoff == (tf32 ? 0x1p-11 : 0x1p-8));
    CHECK_FALSE(kernels::gpu_can_implement(kernel, GpuGemm{DType::f64, 8, 8, 8}));
    CHECK_FALSE(kernels::gpu_can_implement(kernel, GpuGemm{DType::f32, std::int64_t{1} << 31, 8, 8}));
  }
}

// `--kernel auto` takes the tune file's winner per dtype and size, cuBLAS included, ignores one
// it may not choose (reduced precision), and is cuBLAS where the file has no choice for a dtype.
TEST_CASE("auto takes the tuned winner, cuBLAS included, and cuBLAS without one", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const std::string path = "tessera-test-auto-tune.json";
  {
    std::ofstream f(path);
    f << R"({"format": "tessera-tune-1", "device": "any", "choices": [
          {"dtype": "f64", "m": 8192, "n": 8192, "k": 8192, "kernel": "cublas", "gflops": 63000},
          {"dtype": "f64", "m": 1024, "n": 1024, "k": 1024, "kernel": "dmma-64x64", "gflops": 39000},
          {"dtype": "f64", "m": 64, "n": 64, "k": 64, "kernel": "tf32", "gflops": 1}]})";
  }
  ::setenv("TESSERA_TUNE_FILE", path.c_str(), 1);
  // `auto` is resolved once, for the whole job (backend::resolve_kernel, reading the tune file).
  const auto resolve = [](DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
    return backend::resolve_kernel(backend::Kind::cuda, "auto", dtype, m, n, k);
  };
  CHECK(resolve(DType::f64, 8192, 8192, 8192) == "cublas");
  CHECK(resolve(DType::f64, 16384, 16384, 16384) == "cublas");  // the nearest tuned size
  CHECK(resolve(DType::f64, 1000, 1100, 900) == "dmma-64x64");
  CHECK(resolve(DType::f64, 60, 60, 60) == "cublas");        // tf32 may not be chosen: the built-in
  CHECK(resolve(DType::f32, 8192, 8192, 8192) == "cublas");  // no f32 choice: the built-in
  auto cuda = backend::make_cuda_backend({0, 1});
  ::unsetenv("TESSERA_TUNE_FILE");
  std::remove(path.c_str());
  const auto warnings = cuda->warnings();
  CHECK(std::any_of(warnings.begin(), warnings.end(),
                    [](const std::string& w) { return w.find("'tf32'") != std::string::npos; }));

  // The library loads and warms up beside the caller's work (prepare), the handle before the first
  // timed step.
  cuda->prepare("cublas", DType::f64);
  const Shape s{33, 17, 65};
  const Problem<double> p(s, 3);
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<double>::quiet_NaN());
  cuda->gemm(resolve(DType::f64, s.m, s.n, s.k), {DType::f64, s.m, s.n, s.k, p.a.data(), p.b.data(), c.data()});
  CHECK(compare(c, p, "cublas") == "");
  CHECK(kernels::cublas_loaded());
}

// `auto` for a whole job (issue 39): where the tuned winner is cuBLAS by a tie, a job that cuBLAS
// would not finish sooner, its libraries' load counted, runs the fastest own kernel and never
// loads cuBLAS; a job long enough to pay the load back keeps cuBLAS.
TEST_CASE("auto weighs cuBLAS's load against the whole job", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const std::string path = "tessera-test-auto-whole-job.json";
  {
    std::ofstream f(path);
    f << R"({"format": "tessera-tune-1", "device": "any", "libraries": {"cublas": {"load_seconds": 0.2}},
          "choices": [{"dtype": "f32", "m": 8192, "n": 8192, "k": 8192, "kernel": "cublas", "gflops": 51000,
                       "candidates": {"cublas": 51000, "warptile-128x256-16x8": 51400, "warptile-64x64": 20000}},
                      {"dtype": "f64", "m": 4096, "n": 4096, "k": 4096, "kernel": "cublas", "gflops": 61800,
                       "candidates": {"cublas": 61800, "dmma8": 57000}}]})";
  }
  ::setenv("TESSERA_TUNE_FILE", path.c_str(), 1);
  const auto resolve = [](DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
    return backend::resolve_kernel(backend::Kind::cuda, "auto", dtype, m, n, k);
  };
  const bool loaded = kernels::cublas_loaded();  // an earlier case of this process may have loaded it
  CHECK(resolve(DType::f32, 16384, 16384, 16384) == (loaded ? "cublas" : "warptile-128x256-16x8"));
  CHECK(resolve(DType::f64, 4096, 4096, 4096) == (loaded ? "cublas" : "dmma8"));
  CHECK(resolve(DType::f64, 65536, 65536, 65536) == "cublas");  // 9.1 s against 9.9 s: pays 0.2 s back
  // A process that keeps its backend (tessera.matmul, tessera::multiply on buffers): the load serves
  // every call to come, so the tuned rates alone decide: cuBLAS unless an own kernel beats it by 3%.
  const auto in_process = [](DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
    return backend::resolve_kernel(backend::Kind::cuda, "auto", dtype, m, n, k, backend::LoadHorizon::process);
  };
  CHECK(in_process(DType::f32, 16384, 16384, 16384) == "cublas");  // 51400 against 51000: within the margin
  CHECK(in_process(DType::f64, 4096, 4096, 4096) == "cublas");
  ::unsetenv("TESSERA_TUNE_FILE");
  std::remove(path.c_str());
  CHECK(kernels::cublas_loaded() == loaded);  // deciding loads nothing
}

// tessera bench's clocks and power: NVML samples the GPU the backend holds while it computes.
TEST_CASE("telemetry samples the GPU's SM clock and power while a GEMM runs", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  auto cuda = backend::make_cuda_backend({0, 1});
  backend::GpuTelemetry telemetry(cuda->device_identity().pci_bus_id, std::chrono::milliseconds(5));
  if (!telemetry.available()) SKIP("NVML: " << telemetry.why_unavailable());
  const Shape s{1024, 1024, 1024};
  const Problem<float> p(s, 4);
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  telemetry.start();
  for (int i = 0; i < 5; ++i)
    cuda->gemm("warptile-64x64", {DType::f32, s.m, s.n, s.k, p.a.data(), p.b.data(), c.data()});
  const auto t = telemetry.stop();
  CHECK(t.samples >= 2);  // the first at start(), the last at stop()
  CHECK(t.sm_mhz_median > 0);
  if (!std::isnan(telemetry.sm_clock_max_mhz())) CHECK(t.sm_mhz_max <= telemetry.sm_clock_max_mhz());
  if (telemetry.power_source().rfind("none", 0) != 0) CHECK(t.power_w_median > 0);
}

TEST_CASE("the cuda backend picks GPU local rank mod the visible GPUs", "[gpu][small]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const int count = backend::cuda_device_count();
  auto cuda = backend::make_cuda_backend({count, count + 1});
  CHECK(cuda->device_id() == 0);  // local rank `count` wraps around to GPU 0
  // Sharing is reported by the pipeline, which compares PCI bus ids across the node's ranks
  // (under srun --gpus-per-task=1 every rank sees one "GPU 0", each a different one).
  CHECK(cuda->warnings().empty());
}

TEST_CASE("the cuda backend pins large host buffers and computes correctly", "[gpu]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  // A is 5000 x 1100 float64 = 42 MiB: above the backend's pinning threshold.
  const Shape s{5000, 7, 1100};
  const Problem<double> p(s, 3);
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n));
  auto cuda = backend::make_cuda_backend({0, 1});
  const auto phases = cuda->gemm("tiled32", {DType::f64, s.m, s.n, s.k, p.a.data(), p.b.data(), c.data()});
  CHECK(phases.size() == 3);
  CHECK(compare(c, p, "tiled32") == "");
}

// M or N above 2^31 elements: 64-bit offsets and grid striding. 2 x 8 GiB of device memory.
// A + B + C of 480 MiB: above the backend's pipelining threshold (256 MiB), so C runs in row
// tiles with the copies overlapping the kernels: page-locked host memory as the pipeline gives
// it, and odd sizes so the last row tile is short.
TEST_CASE("the cuda backend pipelines large in-core GEMMs in row tiles", "[gpu]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Shape s{6001, 6007, 2003};
  const Problem<double> p(s, 5);
  auto cuda = backend::make_cuda_backend({0, 1});
  const std::size_t c_bytes = static_cast<std::size_t>(s.m * s.n) * sizeof(double);
  backend::HostBuffer a = cuda->allocate_host(p.a.size() * sizeof(double));
  backend::HostBuffer b = cuda->allocate_host(p.b.size() * sizeof(double));
  backend::HostBuffer c = cuda->allocate_host(c_bytes);
  std::copy(p.a.begin(), p.a.end(), reinterpret_cast<double*>(a.data()));
  std::copy(p.b.begin(), p.b.end(), reinterpret_cast<double*>(b.data()));
  std::fill_n(reinterpret_cast<double*>(c.data()), s.m * s.n, std::numeric_limits<double>::quiet_NaN());
  const auto phases = cuda->gemm("warptile-64x64", {DType::f64, s.m, s.n, s.k, a.data(), b.data(), c.data()});
  CHECK(phases.size() == 3);
  const auto* out = reinterpret_cast<const double*>(c.data());
  CHECK(compare(std::vector<double>(out, out + s.m * s.n), p, "warptile-64x64") == "");
  CHECK(cuda->warnings().empty());  // pipelined, not out of core: no note
}

TEST_CASE("hand-written kernels index matrices beyond 2^31 elements", "[.][gpu][huge]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const std::int64_t big = (std::int64_t{1} << 31) + 33;
  GpuContext ctx;
  Stream stream;
  for (const Shape& s : {Shape{big, 1, 1}, Shape{1, big, 1}}) {
    // k = 1 and values exact in float: C = A * 0.5 exactly.
    const std::int64_t len = std::max(s.m, s.n);
    std::vector<float> x(static_cast<std::size_t>(len));
    for (std::int64_t i = 0; i < len; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 4093 - 2046);
    const float one_half = 0.5f;
    DeviceBuffer dx(x.size() * sizeof(float), "long operand");
    DeviceBuffer dh(sizeof(float), "1x1 operand");
    DeviceBuffer dc(x.size() * sizeof(float), "C");
    to_device(dx, x.data(), stream);
    to_device(dh, &one_half, stream);
    // A is m x 1 and B 1 x 1 (tall case), or A 1 x 1 and B 1 x n (wide case).
    const void* a = s.m > 1 ? dx.get() : dh.get();
    const void* b = s.m > 1 ? dh.get() : dx.get();
    for (const std::string& kernel : kernels::gpu_kernel_names()) {
      INFO("kernel " << kernel << ", " << shape_str(s));
      const GpuGemm g{DType::f32, s.m, s.n, s.k, a, b, dc.get(), stream.get()};
      if (!kernels::gpu_can_implement(kernel, g)) continue;  // cuBLAS: int sizes
      poison(dc, stream);
      kernels::gpu_gemm(kernel, g, ctx);
      const std::vector<float> c = to_host<float>(dc, x.size(), stream);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < c.size(); ++i) bad += c[i] != x[i] * 0.5f;
      CHECK(bad == 0);
    }
  }
}

// Not a check: prints what registering host memory buys for one copy (the backend registers
// large buffers; this is the measurement behind that choice).
TEST_CASE("pageable vs registered host-to-device copies", "[.][gpu][pinning]") {
  if (tessera::backend::cuda_device_count() == 0) SKIP("no GPU visible");
  for (const std::size_t bytes : {std::size_t{64} << 20, std::size_t{1} << 30}) {
    std::vector<char> host(bytes, 1);
    DeviceBuffer dev(bytes, "copy target");
    // A pageable cudaMemcpy may return before its DMA is done: synchronise before reading clocks.
    const auto copy = [&] {
      CUDA_CHECK(cudaMemcpy(dev.get(), host.data(), bytes, cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaDeviceSynchronize());
    };
    copy();  // warm up
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    copy();
    auto t1 = clock::now();
    double registered_copy = 0;
    {
      kernels::HostRegistration pin(host.data(), bytes, 0);
      REQUIRE(pin.registered());
      const auto t2 = clock::now();
      copy();
      registered_copy = std::chrono::duration<double>(clock::now() - t2).count();
    }
    auto t3 = clock::now();
    const double pageable = std::chrono::duration<double>(t1 - t0).count();
    const double with_pinning = std::chrono::duration<double>(t3 - t1).count();
    const double gib = static_cast<double>(bytes) / (1 << 30);
    WARN(kernels::format_bytes(static_cast<double>(bytes))
         << ": pageable copy " << gib / pageable << " GiB/s; register + copy + unregister " << gib / with_pinning
         << " GiB/s (the copy alone " << gib / registered_copy << " GiB/s)");
  }
}

TEST_CASE("gpu_count_nonfinite: NaN and Inf counted, the first found, packed, strided and unaligned", "[gpu][small]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  // The scan before a product of GPU memory (backend/cuda_held_gemm.cpp): a packed matrix whose
  // address is 16-byte aligned takes the vector pass (a tail of 1-3 elements past the last vector),
  // others the row pass; each against a count on the host, with the first (row * cols + col).
  struct Case {
    std::int64_t rows, cols, ld, offset;  // offset: elements past an aligned address
  };
  const Case c = GENERATE(values<Case>({{1, 1, 1, 0},
                                        {1, 7, 7, 0},
                                        {37, 29, 29, 0},
                                        {37, 29, 29, 1},
                                        {37, 29, 31, 0},
                                        {1, 5, 9, 3},
                                        {1, 5, 9, 0},
                                        {1500, 1003, 1003, 0},
                                        {700, 300, 333, 2}}));
  for (const DType dtype : {DType::f32, DType::f64}) {
    INFO(c.rows << "x" << c.cols << " ld " << c.ld << " offset " << c.offset << " " << dtype_name(dtype));
    const std::size_t es = dtype_size(dtype);
    const auto total = static_cast<std::size_t>(c.offset + (c.rows - 1) * c.ld + c.cols);
    for (int planted : {0, 1, 5}) {
      std::vector<double> values(total, 0.5);
      std::mt19937 gen(static_cast<unsigned>(c.rows * 31 + c.cols + planted));
      std::vector<std::int64_t> at;  // logical indices planted
      for (int p = 0; p < planted; ++p) {
        const std::int64_t r = static_cast<std::int64_t>(gen() % static_cast<unsigned>(c.rows));
        const std::int64_t col = static_cast<std::int64_t>(gen() % static_cast<unsigned>(c.cols));
        values[static_cast<std::size_t>(c.offset + r * c.ld + col)] =
            p % 2 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
        at.push_back(r * c.cols + col);
      }
      // The padding between rows holds NaN too: never to be counted.
      for (std::int64_t r = 0; r < c.rows; ++r)
        for (std::int64_t col = c.cols; col < c.ld && r + 1 < c.rows; ++col)
          values[static_cast<std::size_t>(c.offset + r * c.ld + col)] = std::numeric_limits<double>::quiet_NaN();
      std::sort(at.begin(), at.end());
      at.erase(std::unique(at.begin(), at.end()), at.end());
      std::vector<unsigned char> bytes(total * es);
      for (std::size_t e = 0; e < total; ++e) {
        if (dtype == DType::f32) {
          const auto f = static_cast<float>(values[e]);
          std::memcpy(bytes.data() + e * es, &f, es);
        } else {
          std::memcpy(bytes.data() + e * es, &values[e], es);
        }
      }
      kernels::DeviceBuffer x(bytes.size(), "X"), found(sizeof(kernels::NonfiniteFound), "found");
      CUDA_CHECK(cudaMemcpy(x.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
      const auto* src = static_cast<const unsigned char*>(x.get()) + static_cast<std::size_t>(c.offset) * es;
      kernels::gpu_count_nonfinite(dtype, c.rows, c.cols, src, c.ld, static_cast<kernels::NonfiniteFound*>(found.get()),
                                   nullptr);
      kernels::NonfiniteFound got{};
      CUDA_CHECK(cudaMemcpy(&got, found.get(), sizeof got, cudaMemcpyDeviceToHost));
      CHECK(got.count == at.size());
      if (!at.empty()) CHECK(got.first == static_cast<unsigned long long>(at.front()));
    }
  }
}
