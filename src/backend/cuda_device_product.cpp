// A product kept on the GPU (cuda_gemm.hpp, backend.hpp's DeviceProduct): C = A * B
// kept on the device for the comm layer to sum. K runs in chunks (backend.hpp): the next chunk's
// A columns and B rows go up on a copy stream while the current one multiplies into C
// (accumulating), two chunk buffers in turn on a DoubleBuffer.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda_gemm.hpp"
#include "backend/double_buffer.hpp"
#include "backend/step_times.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {
namespace {

using kernels::DeviceBuffer;

// C on the device after the product; transfers on it (the sum), then the copy down.
class CudaDeviceProduct final : public DeviceProduct {
 public:
  CudaDeviceProduct(Gpu& gpu, DeviceBuffer c, std::size_t row_bytes, kernels::HostRegistration pin_c,
                    std::vector<PhaseTime> computed)
      : gpu_(gpu), c_(std::move(c)), row_bytes_(row_bytes), pin_c_(std::move(pin_c)), computed_(std::move(computed)) {}

  std::vector<PhaseTime> compute_phases() const override { return computed_; }
  void* device_c() override { return c_.get(); }
  void transfer(const std::string& name, const DeviceWork& work) override {
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    transfers_.push_back({name, 0.0});
    const cudaStream_t s = gpu_.stream.get();
    steps_.time(transfers_.back().seconds, s, [&] { work(s); });
  }
  std::vector<PhaseTime> finish(void* host) override {
    return finish_rows(host, 0, row_bytes_ ? static_cast<std::int64_t>(c_.bytes() / row_bytes_) : 0);
  }
  std::vector<PhaseTime> finish_rows(void* host, std::int64_t row0, std::int64_t rows) override {
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    const cudaStream_t s = gpu_.stream.get();
    const std::size_t offset = static_cast<std::size_t>(row0) * row_bytes_;
    const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes_;
    if (offset + bytes > c_.bytes()) throw Error("rows beyond the product kept on the device asked for");
    double d2h = 0;
    if (host && bytes)
      steps_.time(d2h, s, [&] {
        CUDA_CHECK(
            cudaMemcpyAsync(host, static_cast<unsigned char*>(c_.get()) + offset, bytes, cudaMemcpyDeviceToHost, s));
      });
    gpu_.stream.synchronize();
    steps_.collect();
    std::vector<PhaseTime> phases(transfers_.begin(), transfers_.end());
    if (host) phases.push_back({"d2h", d2h});
    c_ = DeviceBuffer();
    pin_c_ = kernels::HostRegistration();
    return phases;
  }
  ~CudaDeviceProduct() override { (void)cudaStreamSynchronize(gpu_.stream.get()); }

 private:
  Gpu& gpu_;
  DeviceBuffer c_;
  std::size_t row_bytes_;            // one row of C (n elements)
  kernels::HostRegistration pin_c_;  // the root's host C, page-locked for the final copy
  std::vector<PhaseTime> computed_;
  std::deque<PhaseTime> transfers_;  // a deque: StepTimes keeps pointers to the totals
  StepTimes steps_;
};

// Checked up front (device_bytes: the figure the footprint model used too), so the message says
// what the product needs rather than which buffer failed; the caller says what to do about it.
// The sums over the devices (NCCL) want a little memory of their own besides: keep 512 MiB spare.
void refuse_over_free_memory(const Gpu& gpu, const std::string& kernel, const GemmProblem& p, std::int64_t chunks) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto need =
      static_cast<std::size_t>(device_bytes(Kind::cuda, {DeviceUse::kept_product, kernel, p.dtype, p.m, p.n, p.k})) +
      (std::size_t{512} << 20);
  if (need > free_bytes)
    throw DeviceError("a product kept on the device needs " + kernels::format_bytes(static_cast<double>(need)) +
                      " on GPU " + std::to_string(gpu.device) + " (C " + shape_str(p.m, p.n) + ", A " +
                      shape_str(p.m, p.k) + ", B " + shape_str(p.k, p.n) + " " + dtype_name(p.dtype) + " in " +
                      std::to_string(chunks) + " chunk(s) of K, 512 MiB for the sums) but " +
                      kernels::format_bytes(static_cast<double>(free_bytes)) + " of " +
                      kernels::format_bytes(static_cast<double>(total_bytes)) + " are free");
}

}  // namespace

std::unique_ptr<DeviceProduct> gemm_kept_on_device(Gpu& gpu, const std::string& kernel, const GemmProblem& p) {
  CUDA_CHECK(cudaSetDevice(gpu.device));
  const std::size_t elem = dtype_size(p.dtype);
  const std::int64_t chunks = p.k >= kKeptChunkMinK ? kKeptChunks : 1;
  const std::int64_t w = (p.k + chunks - 1) / chunks;
  refuse_over_free_memory(gpu, kernel, p, chunks);
  const std::string of_gemm = " of a product kept on the device";
  DeviceBuffer a[DoubleBuffer::kSlots], b[DoubleBuffer::kSlots];
  for (int slot = 0; slot < (chunks > 1 ? 2 : 1); ++slot) {
    a[slot] = DeviceBuffer(static_cast<std::size_t>(p.m * w) * elem, "A columns (" + shape_str(p.m, w) + ")" + of_gemm);
    b[slot] = DeviceBuffer(static_cast<std::size_t>(w * p.n) * elem, "B rows (" + shape_str(w, p.n) + ")" + of_gemm);
  }
  const std::size_t c_bytes = static_cast<std::size_t>(p.m * p.n) * elem;
  DeviceBuffer c(c_bytes, "C (" + shape_str(p.m, p.n) + ")" + of_gemm);

  // The caller's A and B are page-locked already when they come from allocate_host; else they
  // are registered here (host time, counted in h2d), and stay so until the copies are done.
  const cudaStream_t s = gpu.stream.get();
  kernels::Stream copy;
  DoubleBuffer chunk_bufs;
  StepTimes steps;
  double h2d = 0, kernel_s = 0;
  kernels::HostRegistration pin_a, pin_b;
  h2d += host_seconds([&] {
    pin_a = kernels::HostRegistration(p.a, static_cast<std::size_t>(p.m * p.k) * elem, pin_min_bytes());
    pin_b = kernels::HostRegistration(p.b, static_cast<std::size_t>(p.k * p.n) * elem, pin_min_bytes());
  });
  const auto* ha = static_cast<const unsigned char*>(p.a);
  const auto* hb = static_cast<const unsigned char*>(p.b);
  kernels::GpuGemm g{p.dtype, p.m, p.n, p.k, nullptr, nullptr, c.get(), s};
  // A rank with an empty K range (K < ranks) contributes zeros.
  if (p.k == 0 && c_bytes) CUDA_CHECK(cudaMemsetAsync(c.get(), 0, c_bytes, s));
  for (std::int64_t k0 = 0, chunk = 0; k0 < p.k; k0 += w, ++chunk) {
    const int slot = static_cast<int>(chunk % 2);
    const std::int64_t kw = std::min(w, p.k - k0);
    chunk_bufs.fill(slot, copy.get(), [&] {
      steps.time(h2d, copy.get(), [&] {
        if (p.m)
          CUDA_CHECK(cudaMemcpy2DAsync(a[slot].get(), static_cast<std::size_t>(kw) * elem,
                                       ha + static_cast<std::size_t>(k0) * elem, static_cast<std::size_t>(p.k) * elem,
                                       static_cast<std::size_t>(kw) * elem, static_cast<std::size_t>(p.m),
                                       cudaMemcpyHostToDevice, copy.get()));
        if (p.n)
          CUDA_CHECK(cudaMemcpyAsync(b[slot].get(), hb + static_cast<std::size_t>(k0 * p.n) * elem,
                                     static_cast<std::size_t>(kw * p.n) * elem, cudaMemcpyHostToDevice, copy.get()));
      });
    });
    g.a = a[slot].get();
    g.b = b[slot].get();
    g.k = kw;
    g.accumulate = chunk > 0;
    chunk_bufs.use(slot, s, [&] {
      if (c_bytes) steps.time(kernel_s, s, [&] { kernels::gpu_gemm(kernel, g, gpu.context); });
    });
  }
  kernels::HostRegistration pin_c(p.c, c_bytes, pin_min_bytes());
  copy.synchronize();
  gpu.stream.synchronize();  // the chunk buffers are freed on return
  gpu.note_peak();
  steps.collect();
  return std::make_unique<CudaDeviceProduct>(gpu, std::move(c), static_cast<std::size_t>(p.n) * elem, std::move(pin_c),
                                             std::vector<PhaseTime>{{"h2d", h2d}, {"kernel", kernel_s}});
}

}  // namespace tessera::backend
