#include "kernels/int8_gemm.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::kernels {

namespace {

// The search's winners, for the life of the process.
using Key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, int, int>;
std::mutex g_mutex;
std::map<Key, cublasLtMatmulAlgo_t> g_best;

}  // namespace

int pow2_alignment(std::uint64_t bytes) {
  if (bytes == 0) return 256;
  return static_cast<int>(std::min<std::uint64_t>(256, bytes & (~bytes + 1)));
}

struct Int8Gemm::Impl {
  GpuContext& ctx;
  cudaStream_t stream;
  std::int64_t m, n, k;
  void* workspace;
  Key key;
  const CublasLtApi* lt = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  std::vector<cublasLtMatmulAlgo_t> candidates;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events;  // per candidate tried (nullptr: it failed)
  bool decided = false;
  bool remembered = false;
  cublasLtMatmulAlgo_t best{};
  int best_index = -1;
  std::vector<float> ms;    // the candidates' times (-1: failed)
  std::string gemm_ex_why;  // non-empty: cublasGemmEx runs, for this reason

  Impl(GpuContext& c, cudaStream_t s, std::int64_t m_, std::int64_t n_, std::int64_t k_, void* ws)
      : ctx(c), stream(s), m(m_), n(n_), k(k_), workspace(ws) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Also when the constructor throws part-way: what was created is destroyed.
  ~Impl() {
    for (auto& [start, end] : events) {  // released once their calls complete
      if (start) (void)cudaEventDestroy(start);
      if (end) (void)cudaEventDestroy(end);
    }
    if (lt) {
      if (la) (void)lt->layout_destroy(la);
      if (lb) (void)lt->layout_destroy(lb);
      if (lc) (void)lt->layout_destroy(lc);
      if (desc) (void)lt->desc_destroy(desc);
    }
  }

  cublasStatus_t matmul(const cublasLtMatmulAlgo_t& algo, const signed char* a, const signed char* b, int* c) {
    const int one = 1, zero = 0;
    return lt->matmul(handle, desc, &one, a, la, b, lb, &zero, c, lc, c, lc, &algo, workspace, kWorkspaceBytes, stream);
  }

  void gemm_ex(const signed char* a, const signed char* b, int* c) {
    const CublasApi& api = cublas_api();
    cublasHandle_t h = ctx.cublas();
    CUBLAS_CHECK(api.set_stream(h, stream));
    const int one = 1, zero = 0;
    CUBLAS_CHECK(api.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                             &one, a, CUDA_R_8I, static_cast<int>(k), b, CUDA_R_8I, static_cast<int>(k), &zero, c,
                             CUDA_R_32I, static_cast<int>(m), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
  }

  // Ends the search: waits for the timed calls, takes the fastest, remembers it.
  void decide() {
    if (decided || !gemm_ex_why.empty()) return;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].first == nullptr) continue;
      float t = -1;
      CUDA_CHECK(cudaEventSynchronize(events[i].second));
      CUDA_CHECK(cudaEventElapsedTime(&t, events[i].first, events[i].second));
      ms[i] = t;
      if (best_index < 0 || t < ms[static_cast<std::size_t>(best_index)]) best_index = static_cast<int>(i);
    }
    if (best_index < 0) {
      gemm_ex_why = "every cuBLASLt algorithm offered failed";
      return;
    }
    best = candidates[static_cast<std::size_t>(best_index)];
    decided = true;
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_best[key] = best;
  }
};

Int8Gemm::Int8Gemm(GpuContext& ctx, cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k, int align_a,
                   int align_b, int align_c, void* workspace)
    : impl_(std::make_unique<Impl>(ctx, stream, m, n, k, workspace)) {
  Impl& s = *impl_;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  s.key = Key{device, m, n, k, align_a, align_b, align_c};
  try {
    s.lt = &cublaslt_api();
    s.handle = ctx.cublaslt();
  } catch (const DeviceError& e) {
    s.gemm_ex_why = e.what();
    return;
  }
  const CublasLtApi& lt = *s.lt;
  CUBLAS_CHECK(lt.desc_create(&s.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CUBLAS_CHECK(lt.desc_set(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(lt.desc_set(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
  CUBLAS_CHECK(lt.layout_create(&s.la, CUDA_R_8I, u(k), u(m), k));
  CUBLAS_CHECK(lt.layout_create(&s.lb, CUDA_R_8I, u(k), u(n), k));
  CUBLAS_CHECK(lt.layout_create(&s.lc, CUDA_R_32I, u(m), u(n), m));
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto found = g_best.find(s.key);
    if (found != g_best.end()) {
      s.best = found->second;
      s.decided = s.remembered = true;
      return;
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(lt.pref_create(&pref));
  const std::size_t ws = kWorkspaceBytes;
  const std::uint32_t aa = static_cast<std::uint32_t>(align_a), ab = static_cast<std::uint32_t>(align_b),
                      ac = static_cast<std::uint32_t>(align_c);
  cublasStatus_t st = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
  if (st == CUBLAS_STATUS_SUCCESS) st = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac);
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int got = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.heuristic(s.handle, s.desc, s.la, s.lb, s.lc, s.lc, pref, kCandidates, results, &got);
  (void)lt.pref_destroy(pref);
  for (int i = 0; i < got; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
      s.candidates.push_back(results[i].algo);
  if (st != CUBLAS_STATUS_SUCCESS || s.candidates.empty()) {
    s.gemm_ex_why = "cuBLASLt offered no algorithm";
    return;
  }
  if (s.candidates.size() == 1) {  // nothing to choose
    s.best = s.candidates[0];
    s.best_index = 0;
    s.decided = true;
  }
}

Int8Gemm::~Int8Gemm() = default;

void Int8Gemm::run(const signed char* a, const signed char* b, int* c) {
  Impl& s = *impl_;
  if (!s.gemm_ex_why.empty()) return s.gemm_ex(a, b, c);
  if (s.decided) {
    const cublasStatus_t st = s.matmul(s.best, a, b, c);
    if (st == CUBLAS_STATUS_SUCCESS) return;
    s.gemm_ex_why = std::string("cuBLASLt's chosen algorithm failed: ") + cublas_api().status_name(st);
    return s.gemm_ex(a, b, c);
  }
  // Searching: this call runs the next candidate, timed; a candidate that fails is skipped.
  while (s.events.size() < s.candidates.size()) {
    const std::size_t i = s.events.size();
    cudaEvent_t start = nullptr, end = nullptr;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&end));
    CUDA_CHECK(cudaEventRecord(start, s.stream));
    const cublasStatus_t st = s.matmul(s.candidates[i], a, b, c);
    CUDA_CHECK(cudaEventRecord(end, s.stream));
    s.ms.push_back(-1);
    if (st == CUBLAS_STATUS_SUCCESS) {
      s.events.emplace_back(start, end);
      if (s.events.size() == s.candidates.size()) s.decide();
      return;
    }
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(end);
    s.events.emplace_back(nullptr, nullptr);
  }
  s.decide();  // every candidate left failed: the fastest of those that ran, else cublasGemmEx
  run(a, b, c);
}

std::string Int8Gemm::summary() {
  Impl& s = *impl_;
  if (!s.decided && s.gemm_ex_why.empty() && !s.events.empty()) s.decide();
  if (!s.gemm_ex_why.empty()) return "cublasGemmEx (" + s.gemm_ex_why + ")";
  if (s.remembered) return "cuBLASLt, the algorithm an earlier search chose";
  if (s.ms.empty()) return "cuBLASLt, its one algorithm";
  std::string text = "cuBLASLt search";
  char buf[32];
  for (std::size_t i = 0; i < s.ms.size(); ++i) {
    if (s.ms[i] < 0)
      text += i ? " / failed" : " failed";
    else {
      std::snprintf(buf, sizeof buf, "%s%.2f", i ? " / " : " ", static_cast<double>(s.ms[i]));
      text += buf;
    }
  }
  std::snprintf(buf, sizeof buf, " ms, took #%d", s.best_index);
  return text + buf;
}

}  // namespace tessera::kernels
