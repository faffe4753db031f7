// A C block summed over panels of K on one GPU (backend.hpp's PanelProduct): C stays on the device; panels arrive on a
// copy stream into two slots and multiply on a compute stream, ordered by a DoubleBuffer without the host waiting: a
// slot's copies wait for the multiply that last read it, a multiply waits for its slot's copies.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "backend/cuda_gemm.hpp"
#include "backend/double_buffer.hpp"
#include "backend/step_times.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

using kernels::DeviceBuffer;

class CudaPanelProduct final : public PanelProduct {
 public:
  CudaPanelProduct(Gpu& gpu, std::string kernel, DType dtype, std::int64_t m, std::int64_t n, std::int64_t max_w,
                   void* host_c, std::size_t budget, bool host_staging)
      : gpu_(gpu), kernel_(std::move(kernel)), dtype_(dtype), m_(m), n_(n), esize_(dtype_size(dtype)), host_c_(host_c) {
    refuse_over_budget(max_w, budget);
    const std::string what = " (a panel product's " + shape_str(m, n) + " C block)";
    c_ = DeviceBuffer(static_cast<std::size_t>(m * n) * esize_, "C" + what);
    for (int s = 0; s < kSlots; ++s)
      for (int p = 0; p < 2; ++p) {
        const std::size_t bytes = static_cast<std::size_t>((p == kA ? m : n) * max_w) * esize_;
        dev_[s][p] = DeviceBuffer(bytes, std::string(p == kA ? "A" : "B") + " panel" + what);
        if (bytes && host_staging) {
          void* h = nullptr;
          CUDA_CHECK(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
          host_[s][p] = h;
        }
      }
    if (c_.bytes()) CUDA_CHECK(cudaMemsetAsync(c_.get(), 0, c_.bytes(), compute_.get()));
  }
  ~CudaPanelProduct() override {
    (void)cudaDeviceSynchronize();
    for (auto& slot : host_)
      for (void* h : slot)
        if (h) (void)cudaFreeHost(h);
  }

  void* host(int slot, Panel which) override {
    if (!host_[slot][which] && dev_[slot][which].bytes())
      throw Error("panel product: staging in host memory was not asked for (panel_product's host_staging)");
    return host_[slot][which];
  }
  void* device(int slot, Panel which) override { return dev_[slot][which].get(); }
  void wait_slot(int slot) override { slots_.wait_used(slot); }
  void wait_arrived(int slot) override { slots_.wait_filled(slot); }

  void stage(int slot, Panel which, const void* src, std::int64_t ld, std::int64_t rows, std::int64_t cols) override {
    if (rows * cols == 0) return;
    into_slot(h2d_, slot, [&](cudaStream_t s) {
      CUDA_CHECK(cudaMemcpy2DAsync(dev_[slot][which].get(), static_cast<std::size_t>(cols) * esize_, src,
                                   static_cast<std::size_t>(ld) * esize_, static_cast<std::size_t>(cols) * esize_,
                                   static_cast<std::size_t>(rows), cudaMemcpyHostToDevice, s));
    });
  }
  void upload(int slot, Panel which, std::int64_t elements) override {
    if (elements == 0) return;
    into_slot(h2d_, slot, [&](cudaStream_t s) {
      CUDA_CHECK(cudaMemcpyAsync(dev_[slot][which].get(), host_[slot][which],
                                 static_cast<std::size_t>(elements) * esize_, cudaMemcpyHostToDevice, s));
    });
  }
  void transfer(int slot, const DeviceWork& work) override {
    into_slot(bcast_, slot, [&](cudaStream_t s) { work(s); });
  }
  void multiply(int slot, std::int64_t w) override {
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    if (is_complex(dtype_)) {  // cuBLAS's complex GEMM adds the panels' product to C (beta 1)
      kernels::GpuComplexGemm g;
      g.dtype = dtype_, g.m = m_, g.n = n_, g.k = w;
      g.a = dev_[slot][kA].get(), g.lda = std::max<std::int64_t>(w, 1);
      g.b = dev_[slot][kB].get(), g.ldb = std::max<std::int64_t>(n_, 1);
      g.c = c_.get(), g.ldc = std::max<std::int64_t>(n_, 1);
      g.beta[0] = 1;
      g.stream = compute_.get();
      slots_.use(slot, compute_.get(),
                 [&] { steps_.time(kernel_s_, compute_.get(), [&] { kernels::gpu_complex_gemm(g, gpu_.context); }); });
      return;
    }
    kernels::GpuGemm g{dtype_, m_, n_, w, dev_[slot][kA].get(), dev_[slot][kB].get(), c_.get(), compute_.get()};
    g.accumulate = true;
    slots_.use(slot, compute_.get(),
               [&] { steps_.time(kernel_s_, compute_.get(), [&] { kernels::gpu_gemm(kernel_, g, gpu_.context); }); });
  }
  std::vector<PhaseTime> finish() override {
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    kernels::Event start, done;
    start.record(compute_.get());
    if (c_.bytes()) CUDA_CHECK(cudaMemcpyAsync(host_c_, c_.get(), c_.bytes(), cudaMemcpyDeviceToHost, compute_.get()));
    done.record(compute_.get());
    compute_.synchronize();
    copy_.synchronize();
    gpu_.note_peak();
    steps_.collect();
    std::vector<PhaseTime> phases{{"h2d", h2d_}};
    if (bcast_ > 0) phases.push_back({"bcast", bcast_});
    phases.push_back({"kernel", kernel_s_});
    phases.push_back({"d2h", done.seconds_since(start)});
    return phases;
  }
  void* device_c() override { return c_.get(); }

 private:
  // C, a scratch C where the kernel cannot add into C, and two slots of panels: as device_bytes
  // says, the figure the footprint model used too. The caller says what to do about it.
  void refuse_over_budget(std::int64_t max_w, std::size_t budget) const {
    const auto need =
        static_cast<double>(device_bytes(Kind::cuda, {DeviceUse::panel_product, kernel_, dtype_, m_, n_, max_w}));
    if (need > static_cast<double>(budget))
      throw DeviceError("a panel product needs " + kernels::format_bytes(need) + " on GPU " +
                        std::to_string(gpu_.device) + " (C block " + shape_str(m_, n_) +
                        (gpu_kernel_accumulates(kernel_, dtype_) ? "" : " and its scratch copy") +
                        ", two panels of width " + std::to_string(max_w) + ") but " +
                        kernels::format_bytes(static_cast<double>(budget)) + " are allowed");
  }

  // Work into `slot` on the copy stream: after the multiply that last read the slot, timed into
  // `total`, and marking the slot's panels as arrived.
  template <class F>
  void into_slot(double& total, int slot, F&& enqueue) {
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    const cudaStream_t s = copy_.get();
    slots_.fill(slot, s, [&] { steps_.time(total, s, [&] { enqueue(s); }); });
  }

  Gpu& gpu_;
  std::string kernel_;
  DType dtype_;
  std::int64_t m_, n_;
  std::size_t esize_;
  void* host_c_;
  DeviceBuffer c_;
  DeviceBuffer dev_[kSlots][2];
  void* host_[kSlots][2] = {};
  kernels::Stream copy_, compute_;
  DoubleBuffer slots_;
  StepTimes steps_;
  double h2d_ = 0, bcast_ = 0, kernel_s_ = 0;
};

}  // namespace

std::unique_ptr<PanelProduct> make_cuda_panel_product(Gpu& gpu, const std::string& kernel, DType dtype, std::int64_t m,
                                                      std::int64_t n, std::int64_t max_w, void* host_c,
                                                      std::size_t budget, bool host_staging) {
  CUDA_CHECK(cudaSetDevice(gpu.device));
  return std::make_unique<CudaPanelProduct>(gpu, kernel, dtype, m, n, max_w, host_c, budget, host_staging);
}

}  // namespace tessera::backend
