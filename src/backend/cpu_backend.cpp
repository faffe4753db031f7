// The CPU backend: cpu-naive (the reference), cpu-tiled (cache blocking) and openblas.
#include <chrono>
#include <stdexcept>
#include <thread>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "kernels/cpu_gemm.hpp"

namespace tessera::backend {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string device() const override {
    return "cpu (openblas " + std::to_string(kernels::openblas_threads()) + " threads)";
  }
  std::vector<std::string> kernels() const override { return {"openblas", "cpu-tiled", "cpu-naive"}; }

  std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) override {
    const auto start = std::chrono::steady_clock::now();
    if (p.dtype == DType::f32)
      run<float>(kernel, p);
    else
      run<double>(kernel, p);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
    return {{"compute", dt.count()}};
  }

 private:
  template <class T>
  void run(const std::string& kernel, const GemmProblem& p) {
    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    if (kernel == "openblas" || kernel == "auto") {
      try {
        kernels::openblas_gemm<T>(p.m, p.n, p.k, a, b, c);
      } catch (const std::length_error& e) {
        throw InputError(std::string("openblas: ") + e.what() + "; use more ranks or --kernel cpu-tiled");
      }
    } else if (kernel == "cpu-tiled") {
      kernels::cpu_tiled_gemm<T>(p.m, p.n, p.k, a, b, c);
    } else if (kernel == "cpu-naive") {
      kernels::cpu_naive_gemm<T>(p.m, p.n, p.k, a, b, c);
    } else {
      throw InputError("unknown kernel '" + kernel + "' for the cpu backend (choose: openblas, cpu-tiled, cpu-naive)");
    }
  }
};

}  // namespace

// The device-reduction defaults (backend.hpp): callers ask supports_device_reduce() first.
namespace {
[[noreturn]] void no_device_reduce(const Backend& be) {
  throw Error("the " + be.name() + " backend cannot sum partial products on the device (built without NCCL)");
}
}  // namespace
std::vector<unsigned char> Backend::new_reduce_group_id() { no_device_reduce(*this); }
void Backend::join_reduce_group(const std::vector<unsigned char>&, int, int) { no_device_reduce(*this); }
std::vector<PhaseTime> Backend::gemm_on_device(const std::string&, const GemmProblem&) { no_device_reduce(*this); }
std::vector<PhaseTime> Backend::reduce_to_host(int, void*) { no_device_reduce(*this); }

bool device_reduce_compiled() {
#ifdef TESSERA_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace tessera::backend
