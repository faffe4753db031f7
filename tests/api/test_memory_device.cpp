// libtessera's products of matrices in GPU memory (tessera::Matrix with Memory::device), through
// the installed header and the CUDA runtime only: every case of test_memory.cpp with A, B and C on
// the GPU, and mixed with host memory, against a float64 product; the stream-ordered call; and
// the refusals (memory that is not the GPU's, NaN/Inf, C over A, the CPU backend). Skipped, saying
// so, where no GPU is visible.
#include <cuda_runtime_api.h>

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "memory_check.hpp"
#include "tessera/tessera.hpp"

namespace {

using memory_test::Case;
using memory_test::Operands;

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_CUDA(call) REQUIRE((call) == cudaSuccess)

// A copy of a host vector in device memory, freed at the end of the scope.
template <class T>
struct OnDevice {
  T* p = nullptr;
  std::size_t count = 0;
  explicit OnDevice(const std::vector<T>& host) : count(host.size()) {
    void* memory = nullptr;
    REQUIRE_CUDA(cudaMalloc(&memory, std::max<std::size_t>(count, 1) * sizeof(T)));
    p = static_cast<T*>(memory);
    if (count) REQUIRE_CUDA(cudaMemcpy(p, host.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~OnDevice() { (void)cudaFree(p); }
  std::vector<T> host() const {
    std::vector<T> out(count);
    if (count) REQUIRE_CUDA(cudaMemcpy(out.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
};

// Which of A, B, C lie on the GPU.
struct Where {
  bool a, b, c;
};

template <class T>
void check_case(const Case& c, Where where, void* stream = nullptr) {
  INFO(c.m << "x" << c.n << "x" << c.k << " ta " << c.ta << " tb " << c.tb << " alpha " << c.alpha << " beta " << c.beta
           << " pad " << c.pad << " " << sizeof(T) * 8 << "-bit, on the GPU: A " << where.a << " B " << where.b << " C "
           << where.c << (stream ? ", on a stream" : ""));
  const Operands<T> x(c);
  std::vector<T> host_c = x.c0;
  const OnDevice<T> da(x.a), db(x.b), dc(x.c0);
  using tessera::Memory;
  const tessera::Matrix ma(where.a ? static_cast<const T*>(da.p) : x.a.data(), x.ar, x.ac, x.lda,
                           where.a ? Memory::device : Memory::host);
  const tessera::Matrix mb(where.b ? static_cast<const T*>(db.p) : x.b.data(), x.br, x.bc, x.ldb,
                           where.b ? Memory::device : Memory::host);
  const tessera::Matrix mc(where.c ? dc.p : host_c.data(), c.m, c.n, x.ldc, where.c ? Memory::device : Memory::host);
  tessera::Options o;
  o.backend("cuda").transpose_a(c.ta).transpose_b(c.tb).alpha(c.alpha).beta(c.beta);
  const tessera::Result r = stream ? tessera::multiply(ma, mb, mc, o, stream) : tessera::multiply(ma, mb, mc, o);
  CHECK(r.backend() == "cuda");
  if (stream) REQUIRE_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  const bool enqueued_only = stream && where.a && where.b && where.c;
  CHECK((r.phase_seconds(0, "kernel") == 0) == enqueued_only);
  CHECK(memory_test::wrong_elements(c, x, where.c ? dc.host() : host_c) == 0);
}

}  // namespace

TEST_CASE("multiply(a, b, c) on the GPU: matrices in device memory, alone and mixed with host memory") {
  if (!have_gpu()) SKIP("no GPU visible: the products of matrices in GPU memory are not tried");
  for (const Case& c : memory_test::cases()) {
    check_case<double>(c, {true, true, true});
    check_case<float>(c, {true, true, true});
  }
  for (const Where where : {Where{true, false, false}, Where{false, true, true}, Where{false, false, true}}) {
    check_case<float>({53, 7, 101, false, false, 1.5, 0.5, 5}, where);
    check_case<double>({64, 48, 96, true, true, -0.5, 2, 0}, where);
    check_case<double>({97, 89, 83, true, true, 1, 1, 1}, where);
  }
}

// Host matrices of 32 MiB and more (TESSERA_STAGE_MIN_BYTES' default) go up and down through
// the backend's page-locked staging lanes, their rows split over up to 8 host threads, each
// through two 8 MiB buffers in turn: a C of 33 MiB (2 lanes) and of 128 MiB (8 lanes where the
// machine has 16 cores or more, three chunks each, rows padded), the old C going up beside the
// kernel (beta != 0); A and B of 33 MiB transposed on the GPU from their staged stored form
// (float64). Run in a row, so later calls reuse the lanes and the kept scratch of earlier, larger
// ones. (Not here: both operands staged and transposed in one call, a reference of 9 G
// multiply-adds on the host.)
TEST_CASE("multiply(a, b, c) on the GPU: large host matrices through the staging lanes") {
  if (!have_gpu()) SKIP("no GPU visible: the staged copies of host matrices are not tried");
  const Where host{false, false, false};
  check_case<float>({8200, 4100, 16, false, false, 1, 0.5, 1}, host);
  check_case<float>({4100, 2100, 64, false, false, -1.5, 0.5, 3}, host);
  check_case<double>({2100, 96, 2050, true, false, 1, 0, 5}, host);
  check_case<double>({64, 2100, 2100, false, true, 1, 1, 0}, host);
  check_case<float>({4100, 2100, 64, false, false, 1, 0, 0}, host);  // C written packed, alpha 1, beta 0
}

template <class T>
void check_complex_case(const memory_test::ComplexCase& c, Where where) {
  INFO(c.m << "x" << c.n << "x" << c.k << " op " << c.op_a << c.op_b << " alpha " << c.alpha << " beta " << c.beta
           << " pad " << c.pad << " " << sizeof(T) * 8 << "-bit complex, on the GPU: A " << where.a << " B " << where.b
           << " C " << where.c);
  const memory_test::ComplexOperands<T> x(c);
  std::vector<T> host_c = x.c0;
  const OnDevice<T> da(x.a), db(x.b), dc(x.c0);
  using tessera::Memory;
  const tessera::Matrix ma(where.a ? static_cast<const T*>(da.p) : x.a.data(), x.ar, x.ac, x.lda,
                           where.a ? Memory::device : Memory::host);
  const tessera::Matrix mb(where.b ? static_cast<const T*>(db.p) : x.b.data(), x.br, x.bc, x.ldb,
                           where.b ? Memory::device : Memory::host);
  const tessera::Matrix mc(where.c ? dc.p : host_c.data(), c.m, c.n, x.ldc, where.c ? Memory::device : Memory::host);
  tessera::Options o;
  o.backend("cuda").transpose_a(c.op_a == 'T').transpose_b(c.op_b == 'T').alpha(c.alpha).beta(c.beta);
  o.conjugate_a(c.op_a == 'C').conjugate_b(c.op_b == 'C');
  const tessera::Result r = tessera::multiply(ma, mb, mc, o);
  CHECK(r.backend() == "cuda");
  CHECK(r.kernel() == "cublas");
  CHECK(memory_test::wrong_complex_elements(c, x, where.c ? dc.host() : host_c) == 0);
}

TEST_CASE("multiply(a, b, c) on the GPU: complex64 and complex128 through cuBLAS, every op, on and off the GPU") {
  if (!have_gpu()) SKIP("no GPU visible: complex products on the GPU are not tried");
  for (const auto& c : memory_test::complex_cases())
    for (const Where where : {Where{true, true, true}, Where{false, false, false}, Where{true, false, true}}) {
      check_complex_case<std::complex<float>>(c, where);
      check_complex_case<std::complex<double>>(c, where);
    }
  // NaN in B's imaginary part, on the GPU: refused by its element's place, C as it was.
  using cd = std::complex<double>;
  std::vector<cd> a(6, cd(1, 1)), b(6, cd(1, -1)), c(4, cd(7, 7));
  b[5] = cd(0, std::numeric_limits<double>::quiet_NaN());
  const OnDevice<cd> da(a), db(b), dc(c);
  try {
    tessera::multiply(tessera::Matrix(static_cast<const cd*>(da.p), 2, 3, 0, tessera::Memory::device),
                      tessera::Matrix(static_cast<const cd*>(db.p), 3, 2, 0, tessera::Memory::device),
                      tessera::Matrix(dc.p, 2, 2, 0, tessera::Memory::device), tessera::Options());
    FAIL("accepted");
  } catch (const tessera::MultiplyError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("B holds 1 non-finite value(s) (NaN/Inf) in its elements' real and imaginary "
                                     "parts, the first at (2, 1)") != std::string::npos);
  }
  CHECK(dc.host() == c);
}

// A case's operands put on the GPU by async copies on `stream` (from page-locked host memory, so
// the copies really are in flight when the product is enqueued behind them).
template <class T>
struct Enqueued {
  const Case& c;
  const Operands<T> x;
  T *a = nullptr, *b = nullptr, *cm = nullptr, *pinned = nullptr;
  Enqueued(const Case& which, cudaStream_t stream) : c(which), x(which) {
    const std::size_t na = x.a.size(), nb = x.b.size(), nc = x.c0.size();
    void* p = nullptr;
    REQUIRE_CUDA(cudaMallocHost(&p, (na + nb + nc) * sizeof(T)));
    pinned = static_cast<T*>(p);
    std::copy(x.a.begin(), x.a.end(), pinned);
    std::copy(x.b.begin(), x.b.end(), pinned + na);
    std::copy(x.c0.begin(), x.c0.end(), pinned + na + nb);
    for (auto [to, from, n] : {std::tuple{&a, pinned, na}, {&b, pinned + na, nb}, {&cm, pinned + na + nb, nc}}) {
      REQUIRE_CUDA(cudaMalloc(&p, n * sizeof(T)));
      *to = static_cast<T*>(p);
      REQUIRE_CUDA(cudaMemcpyAsync(*to, from, n * sizeof(T), cudaMemcpyHostToDevice, stream));
    }
  }
  ~Enqueued() {
    for (T* p : {a, b, cm}) (void)cudaFree(p);
    (void)cudaFreeHost(pinned);
  }
  // The product enqueued on `stream` behind the copies, without a NaN scan (nothing waits), or
  // with it (`scan`: beside the GEMM, the host waiting for the scan alone).
  void multiply(cudaStream_t stream, bool scan = false) {
    using tessera::Memory;
    tessera::Options o;
    o.backend("cuda").transpose_a(c.ta).transpose_b(c.tb).alpha(c.alpha).beta(c.beta).allow_nonfinite(!scan);
    const tessera::Result r =
        tessera::multiply(tessera::Matrix(static_cast<const T*>(a), x.ar, x.ac, x.lda, Memory::device),
                          tessera::Matrix(static_cast<const T*>(b), x.br, x.bc, x.ldb, Memory::device),
                          tessera::Matrix(cm, c.m, c.n, x.ldc, Memory::device), o, stream);
    CHECK(r.phase_seconds(0, "enqueue") > 0);
    CHECK(r.phase_seconds(0, "kernel") == 0);
  }
  std::int64_t wrong() const {
    std::vector<T> got(x.c0.size());
    REQUIRE_CUDA(cudaMemcpy(got.data(), cm, got.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return memory_test::wrong_elements(c, x, got);
  }
};

TEST_CASE("multiply(a, b, c, options, stream) on the GPU: ordered on the caller's streams, the scratch shared") {
  if (!have_gpu()) SKIP("no GPU visible: the stream-ordered products are not tried");
  cudaStream_t s1 = nullptr, s2 = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  // Two products in flight at once on two streams, each behind its own inputs' copies, both using
  // the shared scratch (a transposed operand, alpha and beta folded into C): the second call's
  // scratch is the first's while the first may still be multiplying.
  const Case one{97, 89, 83, true, true, 1.5, 0.5, 1}, two{64, 48, 96, true, false, -1, 2, 0};
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    Enqueued<float> first(one, round % 2 ? s1 : s2);
    first.multiply(round % 2 ? s1 : s2, round == 2);
    Enqueued<double> second(two, round % 2 ? s2 : s1);
    second.multiply(round % 2 ? s2 : s1, round >= 1);
    REQUIRE_CUDA(cudaStreamSynchronize(s1));
    REQUIRE_CUDA(cudaStreamSynchronize(s2));
    CHECK(first.wrong() == 0);
    CHECK(second.wrong() == 0);
  }
  // Scanned beside the GEMM, then refused for a NaN planted in A on the stream: the refusal names
  // it. With beta 0 the GEMM wrote C meanwhile (itself, or through the scratch C for alpha 1.5 and
  // rows 3 elements apart): row 1 (A's NaN row) is NaN, the other rows the product as before.
  // With beta != 0 (the old C an input) C is as the call found it.
  for (const Case& kind : {Case{61, 47, 33, false, false, 1, 0, 0}, Case{61, 47, 33, false, false, 1.5, 0, 3},
                           Case{61, 47, 33, false, false, 1, 0.5, 0}}) {
    INFO("beta " << kind.beta);
    Enqueued<float> e(kind, s1);
    e.multiply(s1, true);
    REQUIRE_CUDA(cudaStreamSynchronize(s1));
    CHECK(e.wrong() == 0);
    std::vector<float> before(e.x.c0.size()), after(e.x.c0.size());
    REQUIRE_CUDA(cudaMemcpy(before.data(), e.cm, before.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    REQUIRE_CUDA(cudaMemcpyAsync(e.a + e.x.lda + 7, &nan, sizeof nan, cudaMemcpyHostToDevice, s1));
    try {
      e.multiply(s1, true);
      FAIL("accepted");
    } catch (const tessera::MultiplyError& err) {
      INFO(err.what());
      CHECK(std::string(err.what()).find("A holds 1 non-finite value(s) (NaN/Inf), the first at (1, 7)") !=
            std::string::npos);
    }
    REQUIRE_CUDA(cudaStreamSynchronize(s1));
    REQUIRE_CUDA(cudaMemcpy(after.data(), e.cm, after.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (kind.beta != 0) {
      CHECK(after == before);
    } else {
      std::int64_t off = 0;
      for (std::int64_t i = 0; i < kind.m; ++i)
        for (std::int64_t j = 0; j < kind.n; ++j) {
          const std::size_t at = static_cast<std::size_t>(i * e.x.ldc + j);
          if (i == 1 ? !std::isnan(after[at]) : after[at] != before[at]) ++off;
        }
      CHECK(off == 0);
    }
  }
  // A host-memory product right after (the backend's own stream): it waits for the held work.
  check_case<double>({37, 29, 53, false, false, 1, 0, 0}, {false, false, false});
  (void)cudaStreamDestroy(s1);
  (void)cudaStreamDestroy(s2);
}

TEST_CASE("multiply(a, b, c) on the GPU: a refusal names its cause and leaves C as it was") {
  if (!have_gpu()) SKIP("no GPU visible: the refusals of GPU memory are not tried");
  const std::vector<float> a(6, 1.0f), b(6, 1.0f), c0(4, 7.0f);
  OnDevice<float> da(a), db(b), dc(c0);
  using tessera::Memory;
  const auto refused = [&](const tessera::Matrix& ma, const tessera::Matrix& mb, const tessera::Matrix& mc,
                           const tessera::Options& o, const std::string& words) {
    INFO("expected a refusal saying: " << words);
    try {
      tessera::multiply(ma, mb, mc, o);
      FAIL("accepted");
    } catch (const tessera::MultiplyError& e) {
      INFO("said: " << e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(dc.host() == c0);
  };
  const tessera::Matrix A(static_cast<const float*>(da.p), 2, 3, 0, Memory::device);
  const tessera::Matrix B(static_cast<const float*>(db.p), 3, 2, 0, Memory::device);
  const tessera::Matrix C(dc.p, 2, 2, 0, Memory::device);
  refused(tessera::Matrix(a.data(), 2, 3, 0, Memory::device), B, C, tessera::Options(), "A was given as memory of GPU");
  refused(A, B, C, tessera::Options().backend("cpu"), "A is in GPU memory, but the cpu backend computes on the host");
  refused(A, B, tessera::Matrix(da.p + 1, 2, 2, 0, Memory::device), tessera::Options(), "C shares memory with A");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_CUDA(cudaMemcpy(db.p + 5, &inf, sizeof inf, cudaMemcpyHostToDevice));
  REQUIRE_CUDA(cudaMemcpy(db.p + 3, &nan, sizeof nan, cudaMemcpyHostToDevice));
  refused(A, B, C, tessera::Options(), "B holds 2 non-finite value(s) (NaN/Inf), the first at (1, 1)");
  tessera::multiply(A, B, C, tessera::Options().allow_nonfinite());
  const std::vector<float> got = dc.host();
  CHECK(got[0] == 3.0f);
  CHECK(std::isnan(got[1]));
}
