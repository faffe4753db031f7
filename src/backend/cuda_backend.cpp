// The CUDA backend: one GPU per rank. A GEMM runs in core (A and B up, one kernel, C down), or
// streamed in tiles when it is large, streamed, or does not fit the GPU (cuda_gemm.hpp); the panel
// product and the product kept on the device have files of their own. The kernels come
// from the registry (kernels/gpu_gemm.hpp), `auto` from KernelChoice (the tune file).
#include "backend/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda_device.hpp"
#include "backend/cuda_gemm.hpp"
#include "backend/cuda_kernel_choice.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gpu_gemm.hpp"

namespace tessera::backend {
namespace {

// The most device scratch that products of host matrices keep from call to call (gemm_in_place):
// a quarter of the GPU's memory (35 GB on an H200: a 32768^3 f64 product's A, B, C and C_old
// scratch), at least 512 MiB; with --gpu-memory (`limit`), at most half of it, so that the
// paths that take what is left of the limit keep room. A program that is done multiplying gives
// it back with the kept backend (job::release_memory_backend).
std::size_t held_keep_bytes(std::size_t limit) {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    total = 0;
  }
  const std::size_t keep = std::max(total / 4, 2 * kPipelineMinBytes);
  return limit > 0 ? std::min(keep, limit / 2) : keep;
}

// The default first, then the rest in registry (bench) order.
std::vector<std::string> kernel_list(const std::string& first) {
  std::vector<std::string> names{first};
  for (const std::string& kernel : kernels::gpu_kernel_names())
    if (kernel != first) names.push_back(kernel);
  return names;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const Placement& where)
      : gpu_(select_device(where)),
        device_name_(describe_device(gpu_.device)),
        identity_(cuda_device_identity(gpu_.device)),
        choice_(gpu_.device, &warnings_),
        limit_(where.gpu_memory_limit) {}
  ~CudaBackend() override {
    if (library_loader_.joinable()) library_loader_.join();
  }

  Kind kind() const override { return Kind::cuda; }
  std::string device() const override { return device_name_; }
  int device_id() const override { return gpu_.device; }
  DeviceIdentity device_identity() const override { return identity_; }
  void* device_stream() const override { return gpu_.stream.get(); }
  void enter_thread() const override { (void)cudaSetDevice(gpu_.device); }
  std::int64_t peak_device_bytes() const override {
    return std::max<std::int64_t>(0, gpu_.peak_used - gpu_.start_used);
  }
  std::string precision() const override { return gpu_.context.note(); }
  HostBuffer allocate_host(std::size_t bytes) override { return allocate_page_locked(bytes); }
  std::vector<std::string> warnings() const override {
    auto all = warnings_;
    if (!out_of_core_note_.empty()) all.push_back(out_of_core_note_);
    return all;
  }

  std::vector<std::string> kernels() const override { return kernel_list(default_kernel()); }
  std::string default_kernel() const override { return choice_.default_kernel(); }

  // The library load and a small warm-up GEMM on this backend's GPU (kernels::gpu_warm_up; `kernel`
  // is a resolved name, "auto" warms nothing); a failure is left to the first launch, which loads
  // again and reports it.
  // Once per kernel and type: a backend kept from product to product warms each only the first time.
  void prepare(const std::string& kernel, DType dtype) override {
    if (library_loader_.joinable() || !warmed_.insert({kernel, dtype}).second) return;
    library_loader_ = std::thread([kernel, dtype, device = gpu_.device] {
      try {
        kernels::gpu_warm_up(kernel, dtype, device);
      } catch (...) {
      }
    });
  }

  std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) override {
    if (is_complex(p.dtype)) return gemm_complex(kernel, p);
    ready(kernel, kernels::GpuGemm{p.dtype, p.m, p.n, p.k});
    if (p.m == 0 || p.n == 0) return {{"h2d", 0.0}, {"kernel", 0.0}, {"d2h", 0.0}};
    if (!p.c || (p.k > 0 && (!p.a || !p.b))) throw InputError("cuda backend: GEMM without host buffers for A, B or C");

    const std::size_t elem = dtype_size(p.dtype);
    const std::size_t bytes = static_cast<std::size_t>(p.m * p.k + p.k * p.n + p.m * p.n) * elem;
    const std::size_t room = budget();
    if (bytes > room) return gemm_streamed(gpu_, kernel, p, room, 1, true, &out_of_core_note_);
    // Large enough that the copies cost time: stream C in row tiles (at least kPipelineTiles),
    // so the copies of one tile overlap the kernel of another. B goes up once, first.
    // So is a streamed GEMM (A's rows still arriving, C's rows awaited), whatever its size.
    const bool streamed = p.a_rows || p.c_rows;
    if ((bytes >= kPipelineMinBytes || streamed) && p.m >= 2 * kPipelineTiles)
      return gemm_streamed(gpu_, kernel, p, room, kPipelineTiles, false, nullptr);
    return gemm_in_core(gpu_, kernel, p);
  }

  bool stages(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const override {
    if (m <= 0 || n <= 0 || k <= 0 || is_complex(dtype)) return false;  // complex: gemm() through cuBLAS
    StagedProblem shape;
    shape.dtype = dtype;
    shape.m = m, shape.n = n, shape.k = k;
    return staged_tile_rows(shape, budget()) > 0;
  }

  std::vector<PhaseTime> gemm_staged(const std::string& kernel, const StagedProblem& p) override {
    if (!stages(p.dtype, p.m, p.n, p.k)) return Backend::gemm_staged(kernel, p);
    ready(kernel, kernels::GpuGemm{p.dtype, p.m, p.n, p.k});
    return gemm_staged_on_gpu(gpu_, kernel, p, staged_tile_rows(p, budget()));
  }

  std::unique_ptr<PanelProduct> panel_product(const std::string& kernel, DType dtype, std::int64_t m, std::int64_t n,
                                              std::int64_t max_w, void* host_c, bool host_staging) override {
    ready(kernel, kernels::GpuGemm{real_of(dtype), m, n, max_w});  // a complex one: cuBLAS's (the kernel)
    return make_cuda_panel_product(gpu_, kernel, dtype, m, n, max_w, host_c, budget(), host_staging);
  }

  // Matrices in GPU memory; and host products whose scratch fits the GPU: the held path copies
  // them up into scratch kept from call to call (as torch's allocator and COSMA keep theirs),
  // large ones through page-locked staging lanes of its own at the bus's speed, scans A and B
  // on the GPU and applies alpha and beta there. (gemm()'s paths allocate device buffers and
  // page-locked memory per call, and combine alpha and beta on one host thread: an 8192^3 f64
  // product of host matrices took 0.53-0.61 s there, issue 44.) Those that do not fit take
  // gemm()'s streamed tiles, out of core.
  // TESSERA_HELD_HOST=0/1 forces either way (a diagnostic, to measure one against the other).
  bool holds_in_place(const std::string&, const HeldProblem& p) const override {
    if (p.a.device || p.b.device || p.c_device) return true;  // only here can they be used
    if (is_complex(p.dtype)) return true;                     // cuBLAS's, the only complex GEMM here
    // A quarter more than the scratch it adds: room for the kernel's own workspace (cuBLAS's,
    // f64-ozaki's residues) beside it.
    const std::size_t missing = held_bytes_missing(held_, p);
    if (missing + missing / 4 > budget()) return false;
    if (held_host_) return *held_host_ == "1";
    return true;
  }

  std::vector<PhaseTime> gemm_in_place(const std::string& kernel, const HeldProblem& p) override {
    ready(kernel, kernels::GpuGemm{real_of(p.dtype), p.m, p.n, p.k}, true);
    std::vector<PhaseTime> phases;
    try {
      phases = gemm_held(gpu_, held_, kernel, p);
    } catch (...) {
      // gemm_held waited for its streams before the failure came up: the scratch is idle.
      trim_held();
      throw;
    }
    if (!phases.empty()) trim_held();  // a waited call: its work is done
    return phases;
  }

  std::unique_ptr<DeviceProduct> gemm_on_device(const std::string& kernel, const GemmProblem& p) override {
    if (is_complex(p.dtype))
      throw InputError(std::string("a ") + dtype_name(p.dtype) +
                       " product kept on the GPU (ksplit over NCCL) is not done yet: use --comm host or "
                       "--algorithm panels");  // (ksplit's settle sums complex partials on the host)
    ready(kernel, kernels::GpuGemm{p.dtype, p.m, p.n, p.k});
    if (p.k > 0 && (!p.a || !p.b)) throw InputError("cuda backend: GEMM without host buffers for A or B");
    return gemm_kept_on_device(gpu_, kernel, p);
  }

 private:
  // Before a GEMM is enqueued: refuses one the kernel cannot run, then makes this GPU current and
  // does the kernel's one-time work (cuBLAS: the library, waited for if prepare() started it, and
  // the handle), so that none of it lands inside the timed steps.
  // A path other than gemm_in_place (`held` false) first waits for the held products' work, which
  // may still run on a caller's stream with the context's scratch this path's kernels share.
  // A complex block, C = A B, through cuBLAS's complex GEMM on the held path: A and B up packed,
  // C down (the whole block on the GPU: a complex product is not streamed or computed out of core).
  // A streamed A is waited for whole, C's rows published at the end.
  std::vector<PhaseTime> gemm_complex(const std::string& kernel, const GemmProblem& p) {
    if (p.a_rows) p.a_rows->wait_for(p.m);
    HeldProblem h;
    h.dtype = p.dtype, h.m = p.m, h.n = p.n, h.k = p.k;
    h.a = {p.a, p.m, p.k, std::max<std::int64_t>(p.k, 1)};
    h.b = {p.b, p.k, p.n, std::max<std::int64_t>(p.n, 1)};
    h.c = p.c, h.ldc = std::max<std::int64_t>(p.n, 1);
    h.refuse_nonfinite = false;  // the job scanned A and B as it read them
    std::vector<PhaseTime> phases = gemm_in_place(kernel, h);
    if (p.c_rows) p.c_rows->publish(p.m);
    return phases;
  }

  // The scratch only grows (a large A, then a large B, would keep both): past what it may keep,
  // its device buffers go back (only where their work is done), and the next large call takes
  // them again (cudaMalloc, ~milliseconds).
  void trim_held() {
    if (held_.bytes() <= held_keep_bytes(limit_)) return;
    held_.a = kernels::DeviceBuffer();
    held_.b = kernels::DeviceBuffer();
    held_.c = kernels::DeviceBuffer();
    held_.stored = kernels::DeviceBuffer();
  }

  // What the GEMMs may take of the GPU's memory: --gpu-memory less the held path's kept scratch
  // (without a limit, the free memory, which already leaves it out).
  std::size_t budget() const {
    const std::size_t all = memory_budget(limit_);
    if (limit_ == 0) return all;
    return all > held_.bytes() ? all - held_.bytes() : 0;
  }

  void ready(const std::string& kernel, const kernels::GpuGemm& g, bool held = false) {
    std::string why;
    if (!kernels::gpu_can_implement(kernel, g, &why))
      throw InputError("kernel '" + kernel + "' cannot run this GEMM: " + why);
    if (library_loader_.joinable()) library_loader_.join();  // prepare()'s warm-up, outside the timed steps
    CUDA_CHECK(cudaSetDevice(gpu_.device));
    if (!held && held_.used) CUDA_CHECK(cudaEventSynchronize(held_.done.get()));
    kernels::gpu_prepare(kernel, gpu_.context);
  }

  // Declaration order is construction order: the GPU is chosen (and made current) first.
  std::vector<std::string> warnings_;
  Gpu gpu_;
  std::string device_name_;
  DeviceIdentity identity_;
  KernelChoice choice_;
  std::size_t limit_;                               // --gpu-memory in bytes; 0: what the GPU has free
  std::string out_of_core_note_;                    // set when a GEMM ran out of core
  std::thread library_loader_;                      // prepare()'s, joined on destruction
  std::set<std::pair<std::string, DType>> warmed_;  // what prepare() has warmed up
  HeldScratch held_;  // gemm_in_place's, kept from call to call; freed first, while the GPU is set up
  const std::optional<std::string> held_host_ = env::word("TESSERA_HELD_HOST");  // unset: holds_in_place's rule
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const Placement& where) { return std::make_unique<CudaBackend>(where); }

std::string cuda_resolve_kernel(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, LoadHorizon horizon) {
  std::vector<std::string> warnings;  // the tune file's: the backend reports them when it starts
  return KernelChoice(0, &warnings).resolve(dtype, m, n, k, horizon);
}

}  // namespace tessera::backend
