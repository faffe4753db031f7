// The CUDA backend: one GPU per rank. gemm() copies A and B to the device, runs the chosen
// kernel from the registry (kernels/gpu_gemm.hpp) and copies C back, timing each phase with
// CUDA events.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/cuda_backend.hpp"
#ifdef TESSERA_HAVE_NCCL
#include "backend/nccl_reduce.hpp"
#endif
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_resources.hpp"
#include "kernels/gpu_gemm.hpp"
#include "run/tune.hpp"

namespace tessera::backend {
namespace {

using kernels::DeviceBuffer;
using kernels::Event;
using kernels::HostRegistration;
using kernels::Stream;

// `--kernel auto` without a tune file: tessera's fastest own kernels (cuBLAS is a yardstick, to
// be named explicitly). float32: the warp-tiled cp.async kernel, with 64x64 tiles when 128x128
// tiles would leave SMs idle; float64: the FP64 tensor-core kernel. A tune file written by
// `tessera tune` on this GPU overrides these (run/tune.hpp).
constexpr const char* kDefaultF32 = "warptile-128x128";
constexpr const char* kDefaultF32Small = "warptile-64x64";
constexpr const char* kDefaultF64 = "dmma";

// Host buffers at least this large are page-locked for their copy (see HostRegistration).
// Below it the pageable copy costs about as much as registering would.
constexpr std::size_t kPinMinBytes = std::size_t{32} << 20;


std::string shape_str(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

std::string pci_bus_id(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  std::string text = id;
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return text;
}

// Host seconds of a step that is not device work (registering host memory).
template <class F>
double host_seconds(F&& step) {
  const auto start = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Zeroes [p, p + bytes) with up to 8 threads (64 MiB or more each), so the kernel maps the
// pages in parallel rather than in the one thread that registers them afterwards.
void touch_in_parallel(unsigned char* p, std::size_t bytes) {
  const auto threads = static_cast<std::size_t>(std::clamp<std::size_t>(bytes >> 26, 1, 8));
  std::vector<std::thread> pool;
  const auto part = [&](std::size_t t) {
    const std::size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
    std::memset(p + begin, 0, end - begin);
  };
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(part, t);
  part(0);
  for (auto& th : pool) th.join();
}

// Device memory in use now (all of the device, every process), in bytes; 0 if unknown.
std::int64_t device_bytes_in_use() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<std::int64_t>(total_bytes - free_bytes);
}

// Device time of asynchronous steps, each between two events on its stream, summed per kind
// once the work is done. The steps may overlap (copies beside kernels), so the sums may exceed
// the wall time.
class StepTimes {
 public:
  template <class F>
  void time(double& total, cudaStream_t stream, F&& enqueue) {
    steps_.push_back(std::make_unique<Step>());
    steps_.back()->total = &total;
    steps_.back()->begin.record(stream);
    enqueue();
    steps_.back()->end.record(stream);
  }
  // After the streams are synchronized: adds each step's time to its total.
  void collect() {
    for (const auto& step : steps_) *step->total += step->end.seconds_since(step->begin);
    steps_.clear();
  }

 private:
  struct Step {
    double* total = nullptr;
    Event begin, end;
  };
  std::vector<std::unique_ptr<Step>> steps_;
};

#ifdef TESSERA_HAVE_NCCL
class NcclGroup final : public DeviceGroup {
 public:
  NcclGroup(const std::vector<unsigned char>& id, int rank, int size) : nccl(id, rank, size) {}
  NcclReducer nccl;
};
#endif

// SUMMA on one GPU (backend.hpp): C stays on the device; panels arrive on a copy stream into two
// slots and multiply on a compute stream. Events order them without the host waiting: a slot's
// copies wait for the multiply that last read it, a multiply waits for its slot's copies.
class CudaPanelProduct final : public PanelProduct {
 public:
  CudaPanelProduct(int device, kernels::GpuContext& context, std::string kernel, DType dtype, std::int64_t m,
                   std::int64_t n, std::int64_t max_w, void* host_c, std::size_t budget, bool host_staging,
                   std::int64_t* peak_used)
      : peak_used_(peak_used), device_(device), context_(context), kernel_(std::move(kernel)), dtype_(dtype), m_(m), n_(n),
        esize_(dtype_size(dtype)), host_c_(host_c) {
    kernels::GpuKernelTraits traits;
    kernels::gpu_kernel_traits(kernel_, &traits);
    const double c_bytes = static_cast<double>(m * n) * static_cast<double>(esize_);
    const double panel_bytes = static_cast<double>((m + n) * max_w) * static_cast<double>(esize_);
    const double need = c_bytes * (traits.accumulates ? 1 : 2) + kSlots * panel_bytes;
    if (need > static_cast<double>(budget))
      throw DeviceError(
          "summa needs " + kernels::format_bytes(need) + " on GPU " + std::to_string(device) + " (C block " +
          shape_str(m, n) + (traits.accumulates ? "" : " and its scratch copy") + ", two panels of width " +
          std::to_string(max_w) + ") but " + kernels::format_bytes(static_cast<double>(budget)) +
          " are allowed: use more ranks, a smaller --panel-width, or --algorithm panels (which can run out of core)");
    const std::string what = " (summa, " + shape_str(m, n) + " C block)";
    c_ = DeviceBuffer(static_cast<std::size_t>(c_bytes), "C" + what);
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
      throw Error("summa: panel staging in host memory was not asked for (panel_product's host_staging)");
    return host_[slot][which];
  }
  void* device(int slot, Panel which) override { return dev_[slot][which].get(); }
  void wait_slot(int slot) override { CUDA_CHECK(cudaEventSynchronize(consumed_[slot].get())); }
  void wait_arrived(int slot) override { CUDA_CHECK(cudaEventSynchronize(arrived_[slot].get())); }

  void stage(int slot, Panel which, const void* src, std::int64_t ld, std::int64_t rows, std::int64_t cols) override {
    if (rows * cols == 0) return;
    timed(h2d_, slot, [&] {
      CUDA_CHECK(cudaMemcpy2DAsync(dev_[slot][which].get(), static_cast<std::size_t>(cols) * esize_, src,
                                   static_cast<std::size_t>(ld) * esize_, static_cast<std::size_t>(cols) * esize_,
                                   static_cast<std::size_t>(rows), cudaMemcpyHostToDevice, copy_.get()));
    });
  }
  void upload(int slot, Panel which, std::int64_t elements) override {
    if (elements == 0) return;
    timed(h2d_, slot, [&] {
      CUDA_CHECK(cudaMemcpyAsync(dev_[slot][which].get(), host_[slot][which], static_cast<std::size_t>(elements) * esize_,
                                 cudaMemcpyHostToDevice, copy_.get()));
    });
  }
  void broadcast(int slot, Panel which, std::int64_t elements, DeviceGroup& group, int root) override {
#ifdef TESSERA_HAVE_NCCL
    if (elements == 0) return;
    timed(bcast_, slot, [&] {
      static_cast<NcclGroup&>(group).nccl.broadcast(dev_[slot][which].get(), static_cast<std::size_t>(elements), dtype_,
                                                   root, copy_.get());
    });
#else
    (void)slot, (void)which, (void)elements, (void)group, (void)root;
    throw Error("this build has no NCCL: no device broadcast");
#endif
  }
  void multiply(int slot, std::int64_t w) override {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_.get(), arrived_[slot].get(), 0));
    kernels::GpuGemm g{dtype_, m_, n_, w, dev_[slot][kA].get(), dev_[slot][kB].get(), c_.get(), compute_.get()};
    g.accumulate = true;
    steps_.time(kernel_s_, compute_.get(), [&] { kernels::gpu_gemm(kernel_, g, context_); });
    consumed_[slot].record(compute_.get());
  }
  std::vector<PhaseTime> finish() override {
    CUDA_CHECK(cudaSetDevice(device_));
    Event start, done;
    start.record(compute_.get());
    if (c_.bytes()) CUDA_CHECK(cudaMemcpyAsync(host_c_, c_.get(), c_.bytes(), cudaMemcpyDeviceToHost, compute_.get()));
    done.record(compute_.get());
    CUDA_CHECK(cudaStreamSynchronize(compute_.get()));
    CUDA_CHECK(cudaStreamSynchronize(copy_.get()));
    *peak_used_ = std::max(*peak_used_, device_bytes_in_use());
    steps_.collect();
    std::vector<PhaseTime> phases{{"h2d", h2d_}};
    if (bcast_ > 0) phases.push_back({"bcast", bcast_});
    phases.push_back({"kernel", kernel_s_});
    phases.push_back({"d2h", done.seconds_since(start)});
    return phases;
  }

  double send_c(DeviceGroup& group, int to) override {
#ifdef TESSERA_HAVE_NCCL
    CUDA_CHECK(cudaSetDevice(device_));
    const auto start = std::chrono::steady_clock::now();
    if (c_.bytes())
      static_cast<NcclGroup&>(group).nccl.send(c_.get(), static_cast<std::size_t>(m_ * n_), dtype_, to, compute_.get());
    CUDA_CHECK(cudaStreamSynchronize(compute_.get()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#else
    (void)group, (void)to;
    throw Error("this build has no NCCL: no device gather");
#endif
  }

  double receive_c(DeviceGroup& group, int from, std::int64_t elements, void* host) override {
#ifdef TESSERA_HAVE_NCCL
    if (elements > m_ * n_) throw Error("summa gather: a block larger than rank 0's");
    CUDA_CHECK(cudaSetDevice(device_));
    const auto start = std::chrono::steady_clock::now();
    if (elements > 0) {
      const std::size_t bytes = static_cast<std::size_t>(elements) * esize_;
      static_cast<NcclGroup&>(group).nccl.receive(c_.get(), static_cast<std::size_t>(elements), dtype_, from,
                                                   compute_.get());
      CUDA_CHECK(cudaMemcpyAsync(host, c_.get(), bytes, cudaMemcpyDeviceToHost, compute_.get()));
    }
    CUDA_CHECK(cudaStreamSynchronize(compute_.get()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#else
    (void)group, (void)from, (void)elements, (void)host;
    throw Error("this build has no NCCL: no device gather");
#endif
  }

 private:
  // A copy into `slot` on the copy stream: after the multiply that last read the slot, timed,
  // and marking the slot's panels as arrived.
  template <class F>
  void timed(double& total, int slot, F&& enqueue) {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamWaitEvent(copy_.get(), consumed_[slot].get(), 0));
    steps_.time(total, copy_.get(), enqueue);
    arrived_[slot].record(copy_.get());
  }

  std::int64_t* peak_used_;  // the backend's record of device memory in use
  int device_;
  kernels::GpuContext& context_;
  std::string kernel_;
  DType dtype_;
  std::int64_t m_, n_;
  std::size_t esize_;
  void* host_c_;
  DeviceBuffer c_;
  DeviceBuffer dev_[kSlots][2];
  void* host_[kSlots][2] = {};
  Stream copy_, compute_;
  Event arrived_[kSlots], consumed_[kSlots];  // recorded before use: an unrecorded event counts as done
  StepTimes steps_;
  double h2d_ = 0, bcast_ = 0, kernel_s_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const Placement& where)
      : device_(select_device(where, &warnings_)),
        device_name_(describe(device_)),
        sm_count_(multiprocessors(device_)),
        tuned_(load_tuned(device_, &warnings_)),
        limit_(where.gpu_memory_limit) {}

  std::string name() const override { return "cuda"; }

  // Page-locked, so no copy has to register it first. Ordinary memory, first touched by several
  // threads and then registered with CUDA: cudaHostAlloc zeroes and locks the pages in one thread,
  // about 0.37 s per GiB on the H200 machine, which cost more than the copies it speeds up. If
  // registering fails (a locked-memory limit), the memory stays pageable: slower copies, same
  // results.
  HostBuffer allocate_host(std::size_t bytes) override {
    if (bytes == 0) return {};
    // Diagnostic: TESSERA_HOST_MEMORY=pageable skips page-locking (docs/performance.md compares).
    if (const char* how = std::getenv("TESSERA_HOST_MEMORY"); how && std::string(how) == "pageable")
      return allocate_pageable(bytes);
    constexpr std::size_t kPage = 4096;
    const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
    void* p = std::aligned_alloc(kPage, rounded);
    if (!p) throw std::bad_alloc();
    touch_in_parallel(static_cast<unsigned char*>(p), rounded);
    if (cudaHostRegister(p, rounded, cudaHostRegisterDefault) == cudaSuccess)
      return HostBuffer(p, bytes, [](void* q) {
        (void)cudaHostUnregister(q);
        std::free(q);
      });
    (void)cudaGetLastError();
    return HostBuffer(p, bytes, std::free);
  }

  std::string device() const override { return device_name_; }
  std::int64_t peak_device_bytes() const override { return std::max<std::int64_t>(0, peak_used_ - start_used_); }
  int device_id() const override { return device_; }
  void enter_thread() const override { (void)cudaSetDevice(device_); }
  std::vector<std::string> warnings() const override {
    auto all = warnings_;
    if (!out_of_core_note_.empty()) all.push_back(out_of_core_note_);
    return all;
  }

  // The default first, then the rest in registry (bench) order.
  std::vector<std::string> kernels() const override {
    const std::string first = default_kernel();
    std::vector<std::string> names{first};
    for (const std::string& kernel : kernels::gpu_kernel_names())
      if (kernel != first) names.push_back(kernel);
    return names;
  }

  // What `auto` means when the problem is not known yet (the pipeline asks before it has
  // partitioned): the choice for the largest tuned float32 size, else the built-in default.
  std::string default_kernel() const override {
    const run::TunedChoice* largest = nullptr;
    for (const auto& c : tuned_.choices)
      if (c.dtype == DType::f32 && usable(c.kernel, c.dtype) &&
          (!largest || c.m * c.n * c.k > largest->m * largest->n * largest->k))
        largest = &c;
    return largest ? largest->kernel : kDefaultF32;
  }

  // `auto` for one GEMM: the tuned winner of the nearest tuned size of this dtype, if it can run
  // the problem; else the built-in default for the dtype and size.
  std::string resolve_kernel(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const override {
    const std::string tuned = run::tuned_kernel(tuned_, dtype, m, n, k);
    if (!tuned.empty() && usable(tuned, dtype) &&
        kernels::gpu_can_implement(tuned, kernels::GpuGemm{dtype, m, n, k}))
      return tuned;
    if (dtype == DType::f64) return kDefaultF64;
    // Fewer 128x128 tiles than two per SM: smaller tiles keep more SMs busy.
    const std::int64_t tiles = ((m + 127) / 128) * ((n + 127) / 128);
    return tiles < 2 * static_cast<std::int64_t>(sm_count_) ? kDefaultF32Small : kDefaultF32;
  }

  std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) override {
    const std::string name =
        (kernel.empty() || kernel == "auto") ? resolve_kernel(p.dtype, p.m, p.n, p.k) : kernel;
    const auto known = kernels::gpu_kernel_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : kernels()) list += (list.empty() ? "" : ", ") + k;
      throw InputError("unknown kernel '" + kernel + "' for the cuda backend (choose from: " +
                       list + ", or auto)");
    }
    kernels::GpuGemm g{p.dtype, p.m, p.n, p.k, nullptr, nullptr, nullptr, stream_.get()};
    std::string why;
    if (!kernels::gpu_can_implement(name, g, &why))
      throw InputError("kernel '" + name + "' cannot run this GEMM: " + why);
    if (p.m == 0 || p.n == 0) return {{"h2d", 0.0}, {"kernel", 0.0}, {"d2h", 0.0}};
    if (!p.c || (p.k > 0 && (!p.a || !p.b)))
      throw InputError("cuda backend: GEMM without host buffers for A, B or C");

    CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t elem = dtype_size(p.dtype);
    const std::size_t a_bytes = static_cast<std::size_t>(p.m * p.k) * elem;
    const std::size_t b_bytes_all = static_cast<std::size_t>(p.k * p.n) * elem;
    const std::size_t c_bytes_all = static_cast<std::size_t>(p.m * p.n) * elem;
    const std::size_t budget = memory_budget();
    if (a_bytes + b_bytes_all + c_bytes_all > budget) return gemm_tiled(name, p, budget, 1, true);
    // Large enough that the copies cost time: stream C in row tiles (at least kPipelineTiles),
    // so the copies of one tile overlap the kernel of another. B goes up once, first.
    // So is a streamed GEMM (A's rows still arriving, C's rows awaited), whatever its size.
    const bool streamed = p.a_rows || p.c_rows;
    if ((a_bytes + b_bytes_all + c_bytes_all >= kPipelineMinBytes || streamed) && p.m >= 2 * kPipelineTiles)
      return gemm_tiled(name, p, budget, kPipelineTiles, false);

    const std::size_t b_bytes = static_cast<std::size_t>(p.k * p.n) * elem;
    const std::size_t c_bytes = static_cast<std::size_t>(p.m * p.n) * elem;
    const std::string of_gemm =
        " of a " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
        " " + dtype_name(p.dtype) + " GEMM that needs " +
        kernels::format_bytes(static_cast<double>(a_bytes + b_bytes + c_bytes)) + " on the GPU";
    DeviceBuffer a(a_bytes, "A (" + shape_str(p.m, p.k) + ")" + of_gemm);
    DeviceBuffer b(b_bytes, "B (" + shape_str(p.k, p.n) + ")" + of_gemm);
    DeviceBuffer c(c_bytes, "C (" + shape_str(p.m, p.n) + ")" + of_gemm);
    g.a = a.get();
    g.b = b.get();
    g.c = c.get();

    // Page-lock large host buffers so the copies run at full bus speed. Registering costs host
    // time too, so it is counted in the phase it serves (A, B in h2d; C in d2h).
    HostRegistration pin_a, pin_b, pin_c;
    const double pin_in_seconds = host_seconds([&] {
      pin_a = HostRegistration(p.a, a_bytes, kPinMinBytes);
      pin_b = HostRegistration(p.b, b_bytes, kPinMinBytes);
    });
    const double pin_out_seconds =
        host_seconds([&] { pin_c = HostRegistration(p.c, c_bytes, kPinMinBytes); });

    const cudaStream_t s = stream_.get();
    if (p.a_rows) p.a_rows->wait_for(p.m);
    Event start, copied_in, computed, copied_out;
    start.record(s);
    if (a_bytes) CUDA_CHECK(cudaMemcpyAsync(a.get(), p.a, a_bytes, cudaMemcpyHostToDevice, s));
    if (b_bytes) CUDA_CHECK(cudaMemcpyAsync(b.get(), p.b, b_bytes, cudaMemcpyHostToDevice, s));
    copied_in.record(s);
    kernels::gpu_gemm(name, g, context_);
    computed.record(s);
    CUDA_CHECK(cudaMemcpyAsync(p.c, c.get(), c_bytes, cudaMemcpyDeviceToHost, s));
    copied_out.record(s);
    stream_.synchronize();
    if (p.c_rows) p.c_rows->publish(p.m);
    peak_used_ = std::max(peak_used_, device_bytes_in_use());

    return {{"h2d", pin_in_seconds + copied_in.seconds_since(start)},
            {"kernel", computed.seconds_since(copied_in)},
            {"d2h", pin_out_seconds + copied_out.seconds_since(computed)}};
  }

  // Bytes a GEMM may take on the GPU: --gpu-memory, else 90% of what is free now.
  std::size_t memory_budget() const {
    if (limit_ > 0) return limit_;
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return SIZE_MAX;  // unknown: try in core, and let an allocation failure speak
    }
    return free_bytes / 10 * 9;
  }

  // Out of core: C in mr x nc tiles streamed through the GPU, double-buffered on three streams so
  // the copies overlap the kernels: the A rows of the next tile row and the B columns of the next
  // tile go up (copy-in stream) while the current tile multiplies (compute stream) and the last
  // tile comes back into its place in the host C (copy-out stream). Events order them; the host
  // only enqueues. B is uploaded once in all when nc = n, else once per tile. Tile shape: tall
  // and narrow (B, the part that is re-sent, costs (M / mr) K N words in all): nc is narrowed to
  // 1024 columns first, then mr is halved, then both, until two of each buffer fit the budget.
  //
  // Also the in-core path for large GEMMs (out_of_core false): then at least `min_row_tiles`
  // tiles of rows, for the overlap alone.
  std::vector<PhaseTime> gemm_tiled(const std::string& name, const GemmProblem& p, std::size_t budget,
                                    std::int64_t min_row_tiles, bool out_of_core) {
    const std::size_t elem = dtype_size(p.dtype);
    const auto need = [&](std::int64_t mr, std::int64_t nc) {
      const double b_words = nc == p.n ? static_cast<double>(p.k * nc) : 2.0 * static_cast<double>(p.k * nc);
      return (2.0 * static_cast<double>(mr * p.k + mr * nc) + b_words) * static_cast<double>(elem);
    };
    std::int64_t mr = p.m, nc = p.n;
    const std::int64_t narrow = std::min<std::int64_t>(p.n, 1024), short_rows = std::min<std::int64_t>(p.m, 1024);
    while (need(mr, nc) > static_cast<double>(budget) && (mr > 1 || nc > 1)) {
      if (nc > narrow) nc = std::max(narrow, (nc + 1) / 2);
      else if (mr > short_rows) mr = std::max(short_rows, (mr + 1) / 2);
      else if (mr >= nc) mr = (mr + 1) / 2;
      else nc = (nc + 1) / 2;
    }
    if (need(mr, nc) > static_cast<double>(budget))
      throw DeviceError("GPU " + std::to_string(device_) + ": even one row of A and one column of B (K=" +
                        std::to_string(p.k) + "), twice for double buffering, need " + kernels::format_bytes(need(1, 1)) +
                        ", over the " + kernels::format_bytes(static_cast<double>(budget)) +
                        " allowed; raise --gpu-memory or use --algorithm ksplit (it splits K)");
    if ((p.m + mr - 1) / mr < min_row_tiles) mr = (p.m + min_row_tiles - 1) / min_row_tiles;
    const bool b_once = nc == p.n;
    const std::string what = std::string(out_of_core ? " (out of core, " : " (pipelined, ") + std::to_string(mr) + "x" + std::to_string(nc) + " tiles)";
    DeviceBuffer a[2], b[2], c[2];
    for (int s = 0; s < 2; ++s) {
      a[s] = DeviceBuffer(static_cast<std::size_t>(mr * p.k) * elem, "A rows" + what);
      if (s == 0 || !b_once) b[s] = DeviceBuffer(static_cast<std::size_t>(p.k * nc) * elem, "B columns" + what);
      c[s] = DeviceBuffer(static_cast<std::size_t>(mr * nc) * elem, "C tile" + what);
    }
    Stream copy_in, copy_out;
    const cudaStream_t in = copy_in.get(), out = copy_out.get(), run = stream_.get();
    Event a_ready[2], a_free[2], b_ready[2], b_free[2], computed[2], c_free[2];
    const auto* ha = static_cast<const unsigned char*>(p.a);
    const auto* hb = static_cast<const unsigned char*>(p.b);
    auto* hc = static_cast<unsigned char*>(p.c);
    StepTimes steps;
    double h2d = 0, kernel = 0, d2h = 0;
    if (b_once)
      steps.time(h2d, in, [&] {
        CUDA_CHECK(cudaMemcpyAsync(b[0].get(), hb, static_cast<std::size_t>(p.k * p.n) * elem, cudaMemcpyHostToDevice, in));
        b_ready[0].record(in);
      });
    // Streaming: a host callback on the copy-out stream publishes each tile row of C once it is
    // back in host memory (kept in `done`, which outlives the streams' work).
    struct RowsDone {
      RowProgress* progress;
      std::int64_t rows;
    };
    std::vector<RowsDone> done(static_cast<std::size_t>((p.m + mr - 1) / mr));
    const auto publish = [](void* what) {
      const auto* d = static_cast<const RowsDone*>(what);
      d->progress->publish(d->rows);
    };
    std::int64_t tile = 0;
    // On an error (the reader of A giving up, a fault reported by a synchronize) the enqueued
    // work is waited for before the buffers and `done` go.
    const auto drain = [&] {
      (void)cudaStreamSynchronize(in);
      (void)cudaStreamSynchronize(run);
      (void)cudaStreamSynchronize(out);
    };
    try {
      for (std::int64_t i0 = 0, row = 0; i0 < p.m; i0 += mr, ++row) {
        const std::int64_t rows = std::min(mr, p.m - i0);
        const int sa = static_cast<int>(row % 2);
        if (p.a_rows) p.a_rows->wait_for(i0 + rows);
        CUDA_CHECK(cudaStreamWaitEvent(in, a_free[sa].get(), 0));  // the tile row two back is done with it
        steps.time(h2d, in, [&] {
          CUDA_CHECK(cudaMemcpyAsync(a[sa].get(), ha + static_cast<std::size_t>(i0 * p.k) * elem,
                                     static_cast<std::size_t>(rows * p.k) * elem, cudaMemcpyHostToDevice, in));
        });
        a_ready[sa].record(in);
        for (std::int64_t j0 = 0; j0 < p.n; j0 += nc, ++tile) {
          const std::int64_t cols = std::min(nc, p.n - j0);
          const int st = static_cast<int>(tile % 2), sb = b_once ? 0 : st;
          if (!b_once) {
            CUDA_CHECK(cudaStreamWaitEvent(in, b_free[sb].get(), 0));
            steps.time(h2d, in, [&] {
              CUDA_CHECK(cudaMemcpy2DAsync(b[sb].get(), static_cast<std::size_t>(cols) * elem,
                                           hb + static_cast<std::size_t>(j0) * elem, static_cast<std::size_t>(p.n) * elem,
                                           static_cast<std::size_t>(cols) * elem, static_cast<std::size_t>(p.k),
                                           cudaMemcpyHostToDevice, in));
            });
            b_ready[sb].record(in);
          }
          CUDA_CHECK(cudaStreamWaitEvent(run, a_ready[sa].get(), 0));
          CUDA_CHECK(cudaStreamWaitEvent(run, b_ready[sb].get(), 0));
          CUDA_CHECK(cudaStreamWaitEvent(run, c_free[st].get(), 0));  // tile two back has left this C buffer
          const kernels::GpuGemm g{p.dtype, rows, cols, p.k, a[sa].get(), b[sb].get(), c[st].get(), run};
          steps.time(kernel, run, [&] { kernels::gpu_gemm(name, g, context_); });
          computed[st].record(run);
          a_free[sa].record(run);
          if (!b_once) b_free[sb].record(run);
          CUDA_CHECK(cudaStreamWaitEvent(out, computed[st].get(), 0));
          steps.time(d2h, out, [&] {
            CUDA_CHECK(cudaMemcpy2DAsync(hc + static_cast<std::size_t>(i0 * p.n + j0) * elem,
                                         static_cast<std::size_t>(p.n) * elem, c[st].get(),
                                         static_cast<std::size_t>(cols) * elem, static_cast<std::size_t>(cols) * elem,
                                         static_cast<std::size_t>(rows), cudaMemcpyDeviceToHost, out));
          });
          c_free[st].record(out);
        }
        if (p.c_rows) {
          done[static_cast<std::size_t>(row)] = {p.c_rows, i0 + rows};
          CUDA_CHECK(cudaLaunchHostFunc(out, publish, &done[static_cast<std::size_t>(row)]));
        }
      }
      copy_in.synchronize();
      stream_.synchronize();
      copy_out.synchronize();
    } catch (...) {
      drain();
      throw;
    }
    peak_used_ = std::max(peak_used_, device_bytes_in_use());
    steps.collect();
    if (out_of_core)
      out_of_core_note_ = "out of core: C in " + std::to_string(mr) + "x" + std::to_string(nc) + " tiles within " +
                        kernels::format_bytes(static_cast<double>(budget)) +
                        " of GPU memory, copies overlapping the kernels (phase times overlap)";
    return {{"h2d", h2d}, {"kernel", kernel}, {"d2h", d2h}};
  }

  std::unique_ptr<PanelProduct> panel_product(const std::string& kernel, DType dtype, std::int64_t m, std::int64_t n,
                                              std::int64_t max_w, void* host_c, bool host_staging) override {
    const std::string name = (kernel.empty() || kernel == "auto") ? resolve_kernel(dtype, m, n, max_w) : kernel;
    std::string why;
    if (!kernels::gpu_can_implement(name, kernels::GpuGemm{dtype, m, n, max_w}, &why))
      throw InputError("kernel '" + name + "' cannot run this GEMM: " + why);
    CUDA_CHECK(cudaSetDevice(device_));
    return std::make_unique<CudaPanelProduct>(device_, context_, name, dtype, m, n, max_w, host_c, memory_budget(),
                                              host_staging, &peak_used_);
  }

#ifdef TESSERA_HAVE_NCCL
  std::unique_ptr<DeviceGroup> join_device_group(const std::vector<unsigned char>& id, int rank, int size) override {
    CUDA_CHECK(cudaSetDevice(device_));
    auto group = std::make_unique<NcclGroup>(id, rank, size);
    // NCCL connects peers on the first collective: do that now, not inside the timed run.
    DeviceBuffer warm(std::size_t{1} << 20, "NCCL warm-up buffer");
    CUDA_CHECK(cudaMemsetAsync(warm.get(), 0, warm.bytes(), stream_.get()));
    group->nccl.broadcast(warm.get(), warm.bytes() / sizeof(float), DType::f32, 0, stream_.get());
    // Point-to-point links (summa's gather to member 0) are set up on first use too.
    for (int peer = 1; peer < size; ++peer) {
      if (rank == 0) group->nccl.receive(warm.get(), 1, DType::f32, peer, stream_.get());
      if (rank == peer) group->nccl.send(warm.get(), 1, DType::f32, 0, stream_.get());
    }
    stream_.synchronize();
    return group;
  }

  // ksplit: the partial C stays on the device and NCCL sums it onto the root's GPU.
  bool supports_device_reduce() const override { return true; }

  std::vector<unsigned char> new_reduce_group_id() override {
    CUDA_CHECK(cudaSetDevice(device_));
    return nccl_unique_id();
  }

  void join_reduce_group(const std::vector<unsigned char>& id, int rank, int size) override {
    CUDA_CHECK(cudaSetDevice(device_));
    reducer_ = std::make_unique<NcclReducer>(id, rank, size);
    group_rank_ = rank;
    // NCCL connects peers on the first collective: do that now, not inside the timed reduce.
    DeviceBuffer warm(std::size_t{1} << 20, "NCCL warm-up buffer");
    CUDA_CHECK(cudaMemsetAsync(warm.get(), 0, warm.bytes(), stream_.get()));
    reducer_->reduce_sum(warm.get(), warm.bytes() / sizeof(float), DType::f32, 0, stream_.get());
    stream_.synchronize();
  }

  std::vector<PhaseTime> gemm_on_device(const std::string& kernel, const GemmProblem& p) override {
    const std::string name =
        (kernel.empty() || kernel == "auto") ? resolve_kernel(p.dtype, p.m, p.n, std::max<std::int64_t>(p.k, 1)) : kernel;
    kernels::GpuGemm g{p.dtype, p.m, p.n, p.k, nullptr, nullptr, nullptr, stream_.get()};
    std::string why;
    if (!kernels::gpu_can_implement(name, g, &why))
      throw InputError("kernel '" + name + "' cannot run this GEMM: " + why);
    if (p.k > 0 && (!p.a || !p.b)) throw InputError("cuda backend: GEMM without host buffers for A or B");

    CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t elem = dtype_size(p.dtype);
    const std::size_t a_bytes = static_cast<std::size_t>(p.m * p.k) * elem;
    const std::size_t b_bytes = static_cast<std::size_t>(p.k * p.n) * elem;
    const std::size_t c_bytes = static_cast<std::size_t>(p.m * p.n) * elem;
    // K in chunks (backend.hpp): the next chunk's A columns and B rows go up on a copy stream
    // while the current one multiplies into C (accumulating), two chunk buffers in turn.
    const std::int64_t chunks = p.k >= kKsplitChunkMinK ? kKsplitChunks : 1;
    const std::int64_t w = (p.k + chunks - 1) / chunks;
    kernels::GpuKernelTraits traits;
    kernels::gpu_kernel_traits(name, &traits);
    const std::size_t panel_bytes = static_cast<std::size_t>((p.m + p.n) * w) * elem;
    const std::size_t scratch_bytes = chunks > 1 && !traits.accumulates ? c_bytes : 0;
    // Checked up front, so the message says what ksplit needs rather than which buffer failed.
    // NCCL wants a little memory of its own besides: keep 512 MiB spare.
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t need = (chunks > 1 ? 2 : 1) * panel_bytes + c_bytes + scratch_bytes + (std::size_t{512} << 20);
    if (need > free_bytes)
      throw DeviceError("ksplit needs " + kernels::format_bytes(static_cast<double>(need)) + " on GPU " +
                        std::to_string(device_) + " (partial C " + shape_str(p.m, p.n) + ", A " + shape_str(p.m, p.k) +
                        ", B " + shape_str(p.k, p.n) + " " + dtype_name(p.dtype) + " in " + std::to_string(chunks) +
                        " chunk(s) of K, 512 MiB for NCCL) but " + kernels::format_bytes(static_cast<double>(free_bytes)) +
                        " of " + kernels::format_bytes(static_cast<double>(total_bytes)) +
                        " are free: use --algorithm panels or a smaller problem");
    const std::string of_gemm = " of a ksplit partial product";
    DeviceBuffer a[2], b[2];
    for (int slot = 0; slot < (chunks > 1 ? 2 : 1); ++slot) {
      a[slot] = DeviceBuffer(static_cast<std::size_t>(p.m * w) * elem, "A columns (" + shape_str(p.m, w) + ")" + of_gemm);
      b[slot] = DeviceBuffer(static_cast<std::size_t>(w * p.n) * elem, "B rows (" + shape_str(w, p.n) + ")" + of_gemm);
    }
    kept_c_ = DeviceBuffer(c_bytes, "C (" + shape_str(p.m, p.n) + ")" + of_gemm);
    kept_count_ = static_cast<std::size_t>(p.m * p.n);
    kept_dtype_ = p.dtype;

    // The caller's A and B are page-locked already when they come from allocate_host; else they
    // are registered here (host time, counted in h2d), and stay so until the copies are done.
    const cudaStream_t s = stream_.get();
    Stream copy;
    Event ready[2], consumed[2];
    StepTimes steps;
    double h2d = 0, kernel_s = 0;
    HostRegistration pin_a, pin_b;
    h2d += host_seconds([&] {
      pin_a = HostRegistration(p.a, a_bytes, kPinMinBytes);
      pin_b = HostRegistration(p.b, b_bytes, kPinMinBytes);
    });
    const auto* ha = static_cast<const unsigned char*>(p.a);
    const auto* hb = static_cast<const unsigned char*>(p.b);
    // A rank with an empty K range (K < ranks) contributes zeros.
    if (p.k == 0 && c_bytes) CUDA_CHECK(cudaMemsetAsync(kept_c_.get(), 0, c_bytes, s));
    for (std::int64_t k0 = 0, chunk = 0; k0 < p.k; k0 += w, ++chunk) {
      const int slot = static_cast<int>(chunk % 2);
      const std::int64_t kw = std::min(w, p.k - k0);
      CUDA_CHECK(cudaStreamWaitEvent(copy.get(), consumed[slot].get(), 0));
      steps.time(h2d, copy.get(), [&] {
        if (p.m)
          CUDA_CHECK(cudaMemcpy2DAsync(a[slot].get(), static_cast<std::size_t>(kw) * elem, ha + static_cast<std::size_t>(k0) * elem,
                                       static_cast<std::size_t>(p.k) * elem, static_cast<std::size_t>(kw) * elem,
                                       static_cast<std::size_t>(p.m), cudaMemcpyHostToDevice, copy.get()));
        if (p.n)
          CUDA_CHECK(cudaMemcpyAsync(b[slot].get(), hb + static_cast<std::size_t>(k0 * p.n) * elem,
                                     static_cast<std::size_t>(kw * p.n) * elem, cudaMemcpyHostToDevice, copy.get()));
      });
      ready[slot].record(copy.get());
      CUDA_CHECK(cudaStreamWaitEvent(s, ready[slot].get(), 0));
      g.a = a[slot].get();
      g.b = b[slot].get();
      g.c = kept_c_.get();
      g.k = kw;
      g.accumulate = chunk > 0;
      if (c_bytes) steps.time(kernel_s, s, [&] { kernels::gpu_gemm(name, g, context_); });
      consumed[slot].record(s);
    }
    kept_pin_c_ = HostRegistration(p.c, c_bytes, kPinMinBytes);
    copy.synchronize();
    stream_.synchronize();  // the chunk buffers are freed on return
    peak_used_ = std::max(peak_used_, device_bytes_in_use());
    steps.collect();
    return {{"h2d", h2d}, {"kernel", kernel_s}};
  }

  std::vector<PhaseTime> reduce_to_host(int root, void* host_c) override {
    if (!reducer_) throw Error("cuda backend: reduce_to_host before join_reduce_group");
    CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t c_bytes = kept_count_ * dtype_size(kept_dtype_);
    const bool is_root = group_rank_ == root;
    const cudaStream_t s = stream_.get();
    Event start, reduced, copied_out;
    start.record(s);
    if (kept_count_) reducer_->reduce_sum(kept_c_.get(), kept_count_, kept_dtype_, root, s);
    reduced.record(s);
    if (is_root && c_bytes) CUDA_CHECK(cudaMemcpyAsync(host_c, kept_c_.get(), c_bytes, cudaMemcpyDeviceToHost, s));
    copied_out.record(s);
    stream_.synchronize();
    std::vector<PhaseTime> phases{{"reduce", reduced.seconds_since(start)}};
    if (is_root) phases.push_back({"d2h", copied_out.seconds_since(reduced)});
    kept_c_ = DeviceBuffer();
    kept_pin_c_ = HostRegistration();
    kept_count_ = 0;
    return phases;
  }
#endif

 private:
  // GPU local_rank % count among the visible ones; makes it current.
  static int select_device(const Placement& where, std::vector<std::string>* warnings) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      (void)cudaGetLastError();
      throw DeviceError(std::string("cuda backend: no GPU visible to this process (") +
                        (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
                        "); check the driver, CUDA_VISIBLE_DEVICES and the job's GPU binding");
    }
    const int local_rank = std::max(where.local_rank, 0);
    const int device = local_rank % count;
    CUDA_CHECK(cudaSetDevice(device));
    // Whether ranks share a GPU is decided by the caller, which can compare the PCI bus ids of
    // all ranks on the node (under srun --gpus-per-task=1 each rank sees "GPU 0", a different one).
    (void)warnings;
    return device;
  }

  static int multiprocessors(int device) {
    int count = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }

  // A kernel a tune file may name for `auto`: registered, not opt-in (no reduced precision, no
  // cuBLAS), and taking this dtype (dmma is float64 only).
  static bool usable(const std::string& kernel, DType dtype) {
    kernels::GpuKernelTraits traits;
    return kernels::gpu_kernel_traits(kernel, &traits) && !traits.opt_in &&
           kernels::gpu_can_implement(kernel, kernels::GpuGemm{dtype, 1, 1, 1});
  }

  // The tune file for this GPU (run/tune.hpp), if any. Choices naming kernels this build does
  // not have (or may not choose) are ignored, with a warning.
  static run::TuneTable load_tuned(int device, std::vector<std::string>* warnings) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    run::TuneTable table = run::load_tune_table(prop.name);
    for (const auto& c : table.choices) {
      if (!usable(c.kernel, c.dtype)) {
        warnings->push_back("tune file " + table.path + " names kernel '" + c.kernel +
                            "', which this build cannot choose for " + dtype_name(c.dtype) +
                            "; using the built-in choice there");
      }
    }
    return table;
  }

  // "NVIDIA H200 [0000:1b:00.0]"
  static std::string describe(int device) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    const std::string pci = pci_bus_id(device);
    return std::string(prop.name) + (pci.empty() ? "" : " [" + pci + "]");
  }

  // Declaration order is construction order: the device is chosen (and made current) before
  // the stream and the cuBLAS handle are created on it.
  std::vector<std::string> warnings_;
  int device_;
  std::string device_name_;
  int sm_count_;
  run::TuneTable tuned_;
  std::size_t limit_;              // --gpu-memory in bytes; 0: what the GPU has free
  std::int64_t start_used_ = device_bytes_in_use();  // device memory in use when the backend started
  std::int64_t peak_used_ = start_used_;              // the most seen in use since (sampled after each GEMM)
  std::string out_of_core_note_;   // set when a GEMM ran out of core
  Stream stream_;
  kernels::GpuContext context_;
#ifdef TESSERA_HAVE_NCCL
  // ksplit state: the NCCL group (destroyed before the stream, declared after it) and the
  // partial C kept on the device between gemm_on_device and reduce_to_host.
  std::unique_ptr<NcclReducer> reducer_;
  int group_rank_ = 0;
  DeviceBuffer kept_c_;
  HostRegistration kept_pin_c_;  // the root's host C, page-locked for the final copy
  std::size_t kept_count_ = 0;
  DType kept_dtype_ = DType::f32;
#endif
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const Placement& where) {
  return std::make_unique<CudaBackend>(where);
}

bool cuda_kernel_accumulates(const std::string& kernel, DType dtype) {
  const std::string name = kernel.empty() || kernel == "auto" ? (dtype == DType::f64 ? kDefaultF64 : kDefaultF32) : kernel;
  kernels::GpuKernelTraits traits;
  return kernels::gpu_kernel_traits(name, &traits) && traits.accumulates;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, no device: not an error here
    return 0;
  }
  return count;
}

std::vector<std::string> cuda_describe_devices() {
  std::vector<std::string> lines;
  const int count = cuda_device_count();
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      (void)cudaGetLastError();
      lines.push_back(std::to_string(device) + ": (properties unavailable)");
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line, "%d: %s (sm_%d%d, %.1f GiB, %d SMs)", device, prop.name,
                  prop.major, prop.minor,
                  static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                  prop.multiProcessorCount);
    lines.emplace_back(line);
  }
  return lines;
}

}  // namespace tessera::backend
