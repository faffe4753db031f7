// f64-ozaki, the Ozaki scheme II on the GPU (kernels/ozaki_gpu.cu, issue 45), beyond what every
// kernel gets in test_gpu_kernels.cpp (odd shapes, 1x1x1, K = 1, C += A * B against a float64
// reference):
//   - with a fixed number of moduli it is the host reference (ozaki::gemm_host) bit for bit: the
//     same scaled integers, residues, exact products and rebuild, on odd shapes, K = 1, with
//     20 moduli (the rebuild wrapping modulo 2^128), and with a few rows of a long K (whose
//     statistics the pre-pass gathers in segments of each row);
//   - rows and columns scaled by 2^+-500 come out as accurate as unscaled ones (per-row powers of two);
//   - NaN or Inf in A or B, and data asking more bits than any plan holds, give cuBLAS DGEMM's
//     C exactly (the fall-back), NaN and Inf where DGEMM has them;
//   - rows and columns dominated by one element are as accurate as DGEMM;
//   - with the rule's moduli the error on uniform data is no larger than DGEMM's, and on phi 2 data
//     (where the guard bits give way to an int64's 62) the largest relative error neither;
//   - under one GpuGemm::b_key (one B, many tiles of A) it gives each tile's unkeyed C bit for bit,
//     also after a tile asking more moduli, another B, and another user of the operand scratch;
//   - its int8 GEMMs (kernels/int8_gemm.hpp) are exact with every algorithm the search times, and
//     a second product of the shape takes the one the first chose.
// Each case SKIPs, visibly, without a GPU.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda_backend.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"
#include "kernels/int8_gemm.hpp"
#include "kernels/ozaki.hpp"

namespace {

using namespace tessera;
namespace oz = kernels::ozaki;

struct Operands {
  std::int64_t m, n, k;
  std::vector<double> a, b;
};

Operands uniform(std::int64_t m, std::int64_t n, std::int64_t k, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Operands p{m, n, k, std::vector<double>(static_cast<std::size_t>(m * k)),
             std::vector<double>(static_cast<std::size_t>(k * n))};
  for (double& x : p.a) x = unit(gen);
  for (double& x : p.b) x = unit(gen);
  return p;
}

// C = A B (C += A B with `accumulate`, C starting as `c0`) by `kernel` on the GPU.
std::vector<double> run(const std::string& kernel, const Operands& p, bool accumulate = false,
                        const std::vector<double>& c0 = {}) {
  kernels::Stream stream;
  kernels::GpuContext ctx;
  kernels::DeviceBuffer a(p.a.size() * 8, "A"), b(p.b.size() * 8, "B"), c(static_cast<std::size_t>(p.m * p.n) * 8, "C");
  CUDA_CHECK(cudaMemcpy(a.get(), p.a.data(), a.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b.get(), p.b.data(), b.bytes(), cudaMemcpyHostToDevice));
  if (accumulate)
    CUDA_CHECK(cudaMemcpy(c.get(), c0.data(), c.bytes(), cudaMemcpyHostToDevice));
  else
    CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN: an element never written fails
  kernels::GpuGemm g{DType::f64, p.m, p.n, p.k, a.get(), b.get(), c.get(), stream.get(), accumulate};
  kernels::gpu_prepare(kernel, ctx);
  kernels::gpu_gemm(kernel, g, ctx);
  stream.synchronize();
  std::vector<double> out(static_cast<std::size_t>(p.m * p.n));
  CUDA_CHECK(cudaMemcpy(out.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

// $TESSERA_OZAKI_MODULI for one scope.
struct FixedModuli {
  explicit FixedModuli(int n) { setenv("TESSERA_OZAKI_MODULI", std::to_string(n).c_str(), 1); }
  ~FixedModuli() { unsetenv("TESSERA_OZAKI_MODULI"); }
};

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y)); }

// C_ij summed in binary128 (exact products of doubles).
double exact(const Operands& p, std::int64_t i, std::int64_t j) {
  __float128 sum = 0;
  for (std::int64_t h = 0; h < p.k; ++h)
    sum += static_cast<__float128>(p.a[static_cast<std::size_t>(i * p.k + h)]) *
           static_cast<__float128>(p.b[static_cast<std::size_t>(h * p.n + j)]);
  return static_cast<double>(sum);
}

double max_error(const std::vector<double>& c, const Operands& p) {
  double worst = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j)
      worst = std::max(worst, std::fabs(c[static_cast<std::size_t>(i * p.n + j)] - exact(p, i, j)));
  return worst;
}

}  // namespace

TEST_CASE("f64-ozaki is opt-in, float64 only, and loads cuBLAS", "[gpu][small][ozaki]") {
  // Host only. Opt-in although as accurate as DGEMM: `tessera tune` times whole calls, where it
  // won on the H100, but a job runs it on tiles of A's rows, where it did not (docs/kernels.md).
  kernels::GpuKernelTraits traits;
  REQUIRE(kernels::gpu_kernel_traits("f64-ozaki", &traits));
  CHECK(traits.opt_in);
  CHECK(traits.needs_cublas);
  const std::vector<std::string> candidates = kernels::gpu_auto_candidates();
  CHECK(std::find(candidates.begin(), candidates.end(), "f64-ozaki") == candidates.end());
  CHECK(kernels::gpu_can_implement("f64-ozaki", kernels::GpuGemm{DType::f64, 64, 64, 64}));
  CHECK_FALSE(kernels::gpu_can_implement("f64-ozaki", kernels::GpuGemm{DType::f32, 64, 64, 64}));
}

TEST_CASE("f64-ozaki with fixed moduli is the host reference bit for bit", "[gpu][small][sanitize][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  struct Case {
    std::int64_t m, n, k;
    int moduli;
  };
  const Case c = GENERATE(values<Case>({{1, 1, 1, 20},
                                        {7, 5, 1, 16},
                                        {37, 29, 53, 6},
                                        {37, 29, 53, 14},
                                        {37, 29, 53, 20},
                                        {65, 130, 67, 16},
                                        {3, 200, 300, 18},
                                        // few rows, long K: A's pre-pass in segments of a row
                                        {5, 7, 3000, 16},
                                        {2, 33, 20001, 17}}));
  INFO(c.m << "x" << c.n << "x" << c.k << ", " << c.moduli << " moduli");
  const Operands p = uniform(c.m, c.n, c.k, static_cast<unsigned>(c.m * 7 + c.k));
  std::vector<double> host(static_cast<std::size_t>(c.m * c.n));
  REQUIRE(
      oz::gemm_host(oz::plan_for(c.moduli, c.k), c.m, c.n, c.k, p.a.data(), c.k, p.b.data(), c.n, host.data(), c.n));
  const FixedModuli fixed(c.moduli);
  const std::vector<double> gpu = run("f64-ozaki", p);
  std::size_t differ = 0;
  for (std::size_t e = 0; e < gpu.size(); ++e) differ += same_bits(gpu[e], host[e]) ? 0 : 1;
  CHECK(differ == 0);
}

TEST_CASE("f64-ozaki: rows and columns of 2^+-500 are scaled exactly", "[gpu][small][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  Operands p = uniform(24, 19, 150, 3);
  const Operands plain = p;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t h = 0; h < p.k; ++h)
      p.a[static_cast<std::size_t>(i * p.k + h)] *= std::ldexp(1.0, i % 2 ? 500 : -500);
  for (std::int64_t h = 0; h < p.k; ++h)
    for (std::int64_t j = 0; j < p.n; ++j)
      p.b[static_cast<std::size_t>(h * p.n + j)] *= std::ldexp(1.0, j % 3 ? -400 : 300);
  const std::vector<double> scaled = run("f64-ozaki", p), base = run("f64-ozaki", plain);
  // Powers of two commute with every step: the same C, scaled.
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const int e = (i % 2 ? 500 : -500) + (j % 3 ? -400 : 300);
      INFO("C(" << i << ", " << j << ")");
      CHECK(scaled[static_cast<std::size_t>(i * p.n + j)] ==
            std::ldexp(base[static_cast<std::size_t>(i * p.n + j)], e));
    }
  CHECK(max_error(base, plain) <= 1e-14);
}

TEST_CASE("f64-ozaki gives DGEMM's C for NaN, Inf and where no plan has the bits", "[gpu][small][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const int which = GENERATE(0, 1, 2, 3, 4);
  Operands p = uniform(33, 17, 41, 11);
  std::string what;
  if (which == 0) p.a[40] = nan, what = "NaN in A";
  if (which == 1) p.b[7] = inf, what = "Inf in B";
  if (which == 2) p.a[3] = -inf, p.b[100] = inf, what = "-Inf in A, Inf in B";
  if (which >= 3) {
    // Every row of A (which 3) or column of B (4) one element 2^40 over the rest, K = 20000: rms/mean
    // about sqrt(K) = 2^7.1, so 53 + 8 bits and even the 2 guard bits the rule keeps are 63.
    p = uniform(9, 13, 20000, 4);
    for (std::int64_t r = 0; r < (which == 3 ? p.m : p.n); ++r) {
      const std::int64_t h = (r * 7919) % p.k;
      if (which == 3) p.a[static_cast<std::size_t>(r * p.k + h)] = 0x1p40;
      if (which == 4) p.b[static_cast<std::size_t>(h * p.n + r)] = -0x1p40;
    }
    what = which == 3 ? "rows of A asking 63 bits" : "columns of B asking 63 bits";
  }
  INFO(what);
  const std::vector<double> dgemm = run("cublas", p), ozaki = run("f64-ozaki", p);
  std::size_t differ = 0, nonfinite = 0;
  for (std::size_t e = 0; e < dgemm.size(); ++e) {
    differ += same_bits(dgemm[e], ozaki[e]) ? 0 : 1;
    nonfinite += std::isfinite(ozaki[e]) ? 0 : 1;
  }
  CHECK(differ == 0);
  if (which <= 2) CHECK(nonfinite > 0);
  if (which >= 3) CHECK(nonfinite == 0);
}

TEST_CASE("f64-ozaki: rows and columns dominated by one element are as accurate as DGEMM", "[gpu][small][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  Operands p = uniform(33, 17, 300, 12);
  for (std::int64_t i = 0; i < p.m; ++i) p.a[static_cast<std::size_t>(i * p.k + i % p.k)] *= 0x1p45;
  for (std::int64_t j = 0; j < p.n; ++j) p.b[static_cast<std::size_t>((j % p.k) * p.n + j)] *= 0x1p-30;
  const double dgemm = max_error(run("cublas", p), p), ozaki = max_error(run("f64-ozaki", p), p);
  INFO("max error: DGEMM " << dgemm << ", f64-ozaki " << ozaki);
  CHECK(ozaki <= dgemm);
}

TEST_CASE("f64-ozaki with its rule is as accurate as DGEMM on uniform data; C += A B", "[gpu][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  const Operands p = uniform(40, 48, 8192, 21);
  const double dgemm = max_error(run("cublas", p), p), ozaki = max_error(run("f64-ozaki", p), p);
  INFO("max error: DGEMM " << dgemm << ", f64-ozaki " << ozaki);
  CHECK(ozaki <= dgemm);
  // Accumulating: C0 + A B, against C0 + the exact product.
  std::vector<double> c0(static_cast<std::size_t>(p.m * p.n));
  for (std::size_t e = 0; e < c0.size(); ++e) c0[e] = static_cast<double>(e % 7) - 3.0;
  const std::vector<double> acc = run("f64-ozaki", p, true, c0);
  double worst = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto e = static_cast<std::size_t>(i * p.n + j);
      worst = std::max(worst, std::fabs(acc[e] - (c0[e] + exact(p, i, j))));
    }
  CHECK(worst <= 2 * dgemm + 1e-15);
}

TEST_CASE("f64-ozaki on phi 2 data: the guard gives way, the scheme runs, as accurate as DGEMM", "[gpu][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  // (u - 1/2) e^(2z): rows with rms/mean about 2^5, where the rule with guard 4 asks 63 bits and
  // takes 62 (ozaki::bits_needed); before, this ran DGEMM.
  Operands p{40, 48, 8192, {}, {}};
  std::mt19937_64 gen(23);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> z(0, 1);
  p.a.resize(static_cast<std::size_t>(p.m * p.k));
  p.b.resize(static_cast<std::size_t>(p.k * p.n));
  for (double& x : p.a) x = (u(gen) - 0.5) * std::exp(2.0 * z(gen));
  for (double& x : p.b) x = (u(gen) - 0.5) * std::exp(2.0 * z(gen));
  const std::vector<double> dgemm = run("cublas", p), ozaki = run("f64-ozaki", p);
  double rel_dgemm = 0, rel_ozaki = 0;
  std::size_t differ = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto e = static_cast<std::size_t>(i * p.n + j);
      const double ref = exact(p, i, j);
      rel_dgemm = std::max(rel_dgemm, std::fabs(dgemm[e] - ref) / std::fabs(ref));
      rel_ozaki = std::max(rel_ozaki, std::fabs(ozaki[e] - ref) / std::fabs(ref));
      differ += same_bits(dgemm[e], ozaki[e]) ? 0 : 1;
    }
  INFO("largest relative error: DGEMM " << rel_dgemm << ", f64-ozaki " << rel_ozaki << "; " << differ
                                        << " elements differ from DGEMM's");
  CHECK(differ > 0);  // the scheme ran, not the fall-back
  CHECK(rel_ozaki <= rel_dgemm);
}

TEST_CASE("f64-ozaki keeps B's work under one b_key: tiles of A give the unkeyed C bit for bit",
          "[gpu][small][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  // One B (k x n) on the device for every tile of A's rows, as the staged and streamed GEMMs
  // pass it; each tile's C against the same tile multiplied alone (a fresh context, no key).
  // Between tiles: a tile whose rows ask more moduli (B's residues made again), another B under
  // another key, and another user of the operand scratch (which overwrites it).
  const std::int64_t n = 45, k = 300;
  const Operands whole = uniform(120, n, k, 31);
  kernels::Stream stream;
  kernels::GpuContext ctx;
  kernels::DeviceBuffer b(whole.b.size() * 8, "B"), other_b(whole.b.size() * 8, "B2");
  CUDA_CHECK(cudaMemcpy(b.get(), whole.b.data(), b.bytes(), cudaMemcpyHostToDevice));
  std::vector<double> b2(whole.b.size());
  for (std::size_t e = 0; e < b2.size(); ++e) b2[e] = whole.b[e] * 0.5 + 0.25;
  CUDA_CHECK(cudaMemcpy(other_b.get(), b2.data(), other_b.bytes(), cudaMemcpyHostToDevice));
  const std::uint64_t key = kernels::new_operand_key(), other_key = kernels::new_operand_key();
  REQUIRE(other_key != key);
  struct Tile {
    std::int64_t row0, rows;
    const char* before;  // what happens before this tile
  };
  const std::vector<Tile> tiles{{0, 37, ""},        {37, 64, ""},        {101, 19, "wide rows"},
                                {0, 37, "other B"}, {37, 64, "scratch"}, {101, 19, ""}};
  for (const Tile& t : tiles) {
    INFO("tile at row " << t.row0 << " (" << t.rows << " rows)" << (t.before[0] ? ", after: " : "") << t.before);
    Operands tile{t.rows, n, k,
                  std::vector<double>(whole.a.begin() + t.row0 * k, whole.a.begin() + (t.row0 + t.rows) * k), whole.b};
    if (std::string(t.before) == "wide rows")  // one element 2^30 over its row: more bits, more moduli
      for (std::int64_t i = 0; i < t.rows; ++i) tile.a[static_cast<std::size_t>(i * k + i % k)] = 0x1p30;
    if (std::string(t.before) == "other B") {
      kernels::DeviceBuffer a(tile.a.size() * 8, "A"), c(static_cast<std::size_t>(t.rows * n) * 8, "C");
      CUDA_CHECK(cudaMemcpy(a.get(), tile.a.data(), a.bytes(), cudaMemcpyHostToDevice));
      kernels::GpuGemm g{DType::f64, t.rows, n, k, a.get(), other_b.get(), c.get(), stream.get()};
      g.b_key = other_key;
      kernels::gpu_gemm("f64-ozaki", g, ctx);
      stream.synchronize();
    }
    if (std::string(t.before) == "scratch") {  // another kernel's converted operands over it
      void* taken = ctx.operand_scratch(ctx.operand_scratch_capacity());
      CUDA_CHECK(cudaMemset(taken, 0x5A, ctx.operand_scratch_capacity()));
    }
    kernels::DeviceBuffer a(tile.a.size() * 8, "A"), c(static_cast<std::size_t>(t.rows * n) * 8, "C");
    CUDA_CHECK(cudaMemcpy(a.get(), tile.a.data(), a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));
    kernels::GpuGemm g{DType::f64, t.rows, n, k, a.get(), b.get(), c.get(), stream.get()};
    g.b_key = key;
    kernels::gpu_gemm("f64-ozaki", g, ctx);
    stream.synchronize();
    std::vector<double> keyed(static_cast<std::size_t>(t.rows * n));
    CUDA_CHECK(cudaMemcpy(keyed.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
    INFO(ctx.note());
    CHECK(ctx.note().rfind("f64-ozaki: ", 0) == 0);  // the scheme ran
    const std::vector<double> alone = run("f64-ozaki", tile);
    std::size_t differ = 0;
    for (std::size_t e = 0; e < alone.size(); ++e) differ += same_bits(alone[e], keyed[e]) ? 0 : 1;
    CHECK(differ == 0);
  }
}

TEST_CASE("f64-ozaki's int8 GEMMs are exact whichever algorithm the search tries", "[gpu][small][ozaki]") {
  if (backend::cuda_device_count() == 0) SKIP("no GPU visible");
  struct Case {
    std::int64_t m, n, k;
  };
  // C (m x n, column-major) = A^T B, A k x m and B k x n K-contiguous; k a multiple of 32 and m of
  // 16 as f64-ozaki pads them; one shape large enough for cuBLASLt to offer several algorithms.
  const Case c = GENERATE(values<Case>({{16, 1, 32}, {48, 37, 96}, {1024, 768, 2048}}));
  INFO(c.m << "x" << c.n << "x" << c.k);
  constexpr int kCalls = 2 * kernels::Int8Gemm::kCandidates;
  std::mt19937 gen(static_cast<unsigned>(c.m + c.n + c.k));
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<std::vector<signed char>> a(kCalls), b(kCalls);
  for (int l = 0; l < kCalls; ++l) {
    a[static_cast<std::size_t>(l)].resize(static_cast<std::size_t>(c.k * c.m));
    b[static_cast<std::size_t>(l)].resize(static_cast<std::size_t>(c.k * c.n));
    for (auto& x : a[static_cast<std::size_t>(l)]) x = static_cast<signed char>(value(gen));
    for (auto& x : b[static_cast<std::size_t>(l)]) x = static_cast<signed char>(value(gen));
  }
  const std::size_t a_bytes = static_cast<std::size_t>(c.k * c.m), b_bytes = static_cast<std::size_t>(c.k * c.n),
                    c_bytes = static_cast<std::size_t>(c.m * c.n) * sizeof(int);
  kernels::Stream stream;
  kernels::GpuContext ctx;
  kernels::DeviceBuffer da(a_bytes * kCalls, "A"), db(b_bytes * kCalls, "B"), dc(c_bytes * kCalls, "C"),
      ws(kernels::Int8Gemm::kWorkspaceBytes, "workspace");
  for (int l = 0; l < kCalls; ++l) {
    CUDA_CHECK(cudaMemcpy(static_cast<char*>(da.get()) + l * a_bytes, a[static_cast<std::size_t>(l)].data(), a_bytes,
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(static_cast<char*>(db.get()) + l * b_bytes, b[static_cast<std::size_t>(l)].data(), b_bytes,
                          cudaMemcpyHostToDevice));
  }
  CUDA_CHECK(cudaMemset(dc.get(), 0x55, dc.bytes()));  // an element never written fails
  const auto align = [](std::size_t bytes) { return kernels::pow2_alignment(bytes); };
  std::string first, second;
  for (int pass = 0; pass < 2; ++pass) {  // the second object of the shape: the algorithm remembered
    kernels::Int8Gemm gemm(ctx, stream.get(), c.m, c.n, c.k, align(a_bytes), align(b_bytes), align(c_bytes), ws.get());
    for (int l = pass * kCalls / 2; l < (pass + 1) * kCalls / 2; ++l)
      gemm.run(static_cast<const signed char*>(da.get()) + l * a_bytes,
               static_cast<const signed char*>(db.get()) + l * b_bytes,
               reinterpret_cast<int*>(static_cast<char*>(dc.get()) + l * c_bytes));
    (pass == 0 ? first : second) = gemm.summary();
  }
  stream.synchronize();
  INFO("first: " << first << "; second: " << second);
  CHECK(first.find("cublasGemmEx") == std::string::npos);  // cuBLASLt ran
  CHECK((second.find("earlier search") != std::string::npos || first.find("its one algorithm") != std::string::npos));
  std::vector<int> out(static_cast<std::size_t>(c.m * c.n) * kCalls);
  CUDA_CHECK(cudaMemcpy(out.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
  std::size_t wrong = 0;
  for (int l = 0; l < kCalls; ++l)
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t i = 0; i < c.m; ++i) {
        std::int32_t sum = 0;
        for (std::int64_t h = 0; h < c.k; ++h)
          sum += static_cast<std::int32_t>(a[static_cast<std::size_t>(l)][static_cast<std::size_t>(i * c.k + h)]) *
                 static_cast<std::int32_t>(b[static_cast<std::size_t>(l)][static_cast<std::size_t>(j * c.k + h)]);
        wrong += out[static_cast<std::size_t>(l * c.m * c.n + j * c.m + i)] == sum ? 0 : 1;
      }
  CHECK(wrong == 0);
}
