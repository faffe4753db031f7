// f64-ozaki, the Ozaki scheme II on the GPU (kernels/ozaki_gpu.cu, issue 45), beyond what every
// kernel gets in test_gpu_kernels.cpp (odd shapes, 1x1x1, K = 1, C += A * B against a float64
// reference):
//   - with a fixed number of moduli it is the host reference (ozaki::gemm_host) bit for bit: the
//     same scaled integers, residues, exact products and rebuild, on odd shapes, K = 1, and with
//     20 moduli (the rebuild wrapping modulo 2^128);
//   - rows and columns scaled by 2^+-500 come out as accurate as unscaled ones (per-row powers of two);
//   - NaN or Inf in A or B, and a rule asking more bits than any plan holds, give cuBLAS DGEMM's
//     C exactly (the fall-back), NaN and Inf where DGEMM has them;
//   - rows and columns dominated by one element are as accurate as DGEMM;
//   - with the rule's moduli the error on uniform data is no larger than DGEMM's;
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
                                        {3, 200, 300, 18}}));
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
  if (which >= 3) {  // 40 guard bits: more than 62 bits wanted on each side
    setenv("TESSERA_OZAKI_GUARD", "40", 1);
    what = which == 3 ? "40 guard bits" : "40 guard bits, K = 1";
    if (which == 4) p = uniform(9, 13, 1, 4);
  }
  INFO(what);
  const std::vector<double> dgemm = run("cublas", p), ozaki = run("f64-ozaki", p);
  unsetenv("TESSERA_OZAKI_GUARD");
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
