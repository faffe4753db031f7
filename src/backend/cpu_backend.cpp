// The CPU backend: the kernels of the CPU registry (kernels/cpu_gemm.hpp): openblas, cpu-tiled, cpu-naive.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/words.hpp"
#include "kernels/cpu_gemm.hpp"

namespace tessera::backend {

namespace {

// The registry's kernel of that name; InputError naming the others for a name it lacks.
const kernels::CpuKernel& cpu_kernel(const std::string& name) {
  if (const kernels::CpuKernel* found = kernels::find_cpu_kernel(name)) return *found;
  throw InputError("unknown kernel '" + name +
                   "' for the cpu backend (choose: " + join_words(kernels::cpu_kernel_names()) + ")");
}

class CpuBackend final : public Backend {
  // A leading dimension as the BLAS takes it: at least 1 (an empty matrix's may be 0).
  static std::int64_t ld(std::int64_t v) { return std::max<std::int64_t>(1, v); }

 public:
  Kind kind() const override { return Kind::cpu; }
  std::string device() const override {
    const int threads = kernels::openblas_threads();  // 0: a BLAS that does not tell
    return std::string("cpu (") + kernels::blas_name() +
           (threads > 0 ? " " + std::to_string(threads) + " threads" : "") + ")";
  }
  std::vector<std::string> kernels() const override { return kernels::cpu_kernel_names(); }

  std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) override {
    const auto start = std::chrono::steady_clock::now();
    // Streaming: kPipelineTiles row tiles (as the CUDA backend), each as soon as its rows of A are
    // there, its C rows published after.
    const bool streamed = p.a_rows || p.c_rows;
    const std::int64_t tile = streamed ? std::max<std::int64_t>(1, (p.m + kPipelineTiles - 1) / kPipelineTiles)
                                       : std::max<std::int64_t>(1, p.m);
    const std::size_t esize = dtype_size(p.dtype);
    for (std::int64_t i0 = 0; i0 == 0 || i0 < p.m; i0 += tile) {
      const std::int64_t rows = std::min(tile, p.m - i0);
      if (p.a_rows) p.a_rows->wait_for(i0 + rows);
      GemmProblem part = p;
      part.m = rows;
      part.a = static_cast<const unsigned char*>(p.a) + static_cast<std::size_t>(i0 * p.k) * esize;
      part.c = static_cast<unsigned char*>(p.c) + static_cast<std::size_t>(i0 * p.n) * esize;
      if (is_complex(p.dtype))
        run_complex(part, 0.0);
      else if (p.dtype == DType::f32)
        run<float>(kernel, part);
      else
        run<double>(kernel, part);
      if (p.c_rows) p.c_rows->publish(i0 + rows);
    }
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
    return {{"compute", dt.count()}};
  }

  std::unique_ptr<PanelProduct> panel_product(const std::string& kernel, DType dtype, std::int64_t m, std::int64_t n,
                                              std::int64_t max_w, void* host_c, bool host_staging) override;

  // Matrices in host memory with the BLAS's kernel: its GEMM reads them where they lie (leading
  // dimensions, op, alpha, beta), with no packed copy of A or B and no scratch C.
  bool holds_in_place(const std::string& kernel, const HeldProblem& p) const override {
    const kernels::CpuKernel* k = kernels::find_cpu_kernel(kernel);
    return k && k->vendor && !p.a.device && !p.b.device && !p.c_device &&
           kernels::blas_gemm_fits(p.m, p.n, p.k, ld(p.a.ld), ld(p.b.ld), ld(p.ldc));
  }

  std::vector<PhaseTime> gemm_in_place(const std::string&, const HeldProblem& p) override {
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t lda = ld(p.a.ld), ldb = ld(p.b.ld), ldc = ld(p.ldc);
    const auto op = [](const HeldMatrix& x) { return x.conjugated ? 'C' : x.transposed ? 'T' : 'N'; };
    const double alpha[2] = {p.alpha, p.alpha_imag}, beta[2] = {p.beta, p.beta_imag};
    if (is_complex(p.dtype))
      kernels::blas_complex_gemm(p.dtype == DType::c128, op(p.a), op(p.b), p.m, p.n, p.k, alpha, p.a.data, lda,
                                 p.b.data, ldb, beta, p.c, ldc);
    else if (p.dtype == DType::f32)
      kernels::blas_gemm<float>(p.a.transposed, p.b.transposed, p.m, p.n, p.k, static_cast<float>(p.alpha),
                                static_cast<const float*>(p.a.data), lda, static_cast<const float*>(p.b.data), ldb,
                                static_cast<float>(p.beta), static_cast<float*>(p.c), ldc);
    else
      kernels::blas_gemm<double>(p.a.transposed, p.b.transposed, p.m, p.n, p.k, p.alpha,
                                 static_cast<const double*>(p.a.data), lda, static_cast<const double*>(p.b.data), ldb,
                                 p.beta, static_cast<double*>(p.c), ldc);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
    return {{"compute", dt.count()}};
  }

  // A complex product, C = A * B + beta C, through the BLAS's complex GEMM (the only complex
  // kernel on the CPU: the job takes no other for a complex dtype).
  static void run_complex(const GemmProblem& p, double beta) {
    const double one[2] = {1, 0}, b[2] = {beta, 0};
    kernels::blas_complex_gemm(p.dtype == DType::c128, 'N', 'N', p.m, p.n, p.k, one, p.a, p.k, p.b, p.n, b, p.c, p.n);
  }

  // `kernel` is a resolved name (backend::resolve_kernel): the registry's, never "auto".
  template <class T>
  static void run(const std::string& kernel, const GemmProblem& p) {
    try {
      cpu_kernel(kernel).run<T>(p.m, p.n, p.k, static_cast<const T*>(p.a), static_cast<const T*>(p.b),
                                static_cast<T*>(p.c));
    } catch (const std::length_error& e) {
      throw InputError(kernel + ": " + e.what() + "; use more ranks or the cpu-tiled kernel");
    }
  }
};

// The panel product on the CPU: panels in host slots, each product into a scratch C that is then added to
// the caller's C (the CPU kernels write C = A * B). Synchronous: no overlap on the CPU.
class CpuPanelProduct final : public PanelProduct {
 public:
  CpuPanelProduct(std::string kernel, DType dtype, std::int64_t m, std::int64_t n, std::int64_t max_w, void* host_c)
      : kernel_(std::move(kernel)), dtype_(dtype), m_(m), n_(n), esize_(dtype_size(dtype)), c_(host_c) {
    for (auto& slot : slots_) {
      slot[kA].resize(static_cast<std::size_t>(m * max_w) * esize_);
      slot[kB].resize(static_cast<std::size_t>(max_w * n) * esize_);
    }
    if (!is_complex(dtype)) scratch_.resize(static_cast<std::size_t>(m * n) * esize_);
  }
  void* host(int slot, Panel which) override { return slots_[slot][which].data(); }
  void* device(int slot, Panel which) override { return slots_[slot][which].data(); }
  void wait_slot(int) override {}
  void wait_arrived(int) override {}
  void stage(int slot, Panel which, const void* src, std::int64_t ld, std::int64_t rows, std::int64_t cols) override {
    const auto* from = static_cast<const unsigned char*>(src);
    unsigned char* to = slots_[slot][which].data();
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * esize_;
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(to + static_cast<std::size_t>(r) * row_bytes, from + static_cast<std::size_t>(r * ld) * esize_,
                  row_bytes);
  }
  void upload(int, Panel, std::int64_t) override {}
  void transfer(int, const DeviceWork&) override { throw Error("the cpu backend has no device transfers"); }
  void multiply(int slot, std::int64_t w) override {
    const auto start = std::chrono::steady_clock::now();
    const GemmProblem p{
        dtype_, m_, n_, w, slots_[slot][kA].data(), slots_[slot][kB].data(), is_complex(dtype_) ? c_ : scratch_.data()};
    if (is_complex(dtype_)) {  // the BLAS adds to C itself
      CpuBackend::run_complex(p, 1.0);
    } else if (dtype_ == DType::f32) {
      CpuBackend::run<float>(kernel_, p);
      add<float>();
    } else {
      CpuBackend::run<double>(kernel_, p);
      add<double>();
    }
    kernel_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::vector<PhaseTime> finish() override { return {{"kernel", kernel_seconds_}}; }
  void* device_c() override { return c_; }

 private:
  template <class T>
  void add() {
    const auto* t = reinterpret_cast<const T*>(scratch_.data());
    auto* c = static_cast<T*>(c_);
    const std::int64_t count = m_ * n_;
    for (std::int64_t i = 0; i < count; ++i) c[i] += t[i];
  }
  std::string kernel_;
  DType dtype_;
  std::int64_t m_, n_;
  std::size_t esize_;
  void* c_;
  std::vector<unsigned char> slots_[kSlots][2];
  std::vector<unsigned char> scratch_;
  double kernel_seconds_ = 0;
};

std::unique_ptr<PanelProduct> CpuBackend::panel_product(const std::string& kernel, DType dtype, std::int64_t m,
                                                        std::int64_t n, std::int64_t max_w, void* host_c,
                                                        bool /*host_staging: the slots are host memory anyway*/) {
  (void)cpu_kernel(kernel);  // refused here, before any slot is allocated
  return std::make_unique<CpuPanelProduct>(kernel, dtype, m, n, max_w, host_c);
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

void use_cpu_threads(int threads) { kernels::set_blas_threads(threads); }

}  // namespace tessera::backend
