#pragma once
// The compute step as a backend: the pipeline hands a backend one local GEMM on host memory
// (its block of C) and gets back the time of each phase the backend went through. Backends
// know nothing of MPI, NCCL or HDF5: what the comm layer needs of the device (where a panel or a
// partial product sits, a stream to order its transfers after the compute) they expose as
// pointers and DeviceWork.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::backend {

// What a rank computes on: its cores (a BLAS), or one GPU (CUDA).
enum class Kind { cpu, cuda };
// "cpu", "cuda": --backend's names, and the report's.
const char* kind_name(Kind kind);
// --backend as given: "cpu", "cuda", or "auto" (nullopt: cuda where a GPU is visible and tessera
// was built with CUDA, else cpu). Throws InputError for another name.
std::optional<Kind> parse_kind(const std::string& text);

// Thrown by RowProgress::wait_for when the other side gave up (its own error is the one to report).
struct RowsAbandoned : std::runtime_error {
  RowsAbandoned() : std::runtime_error("rows abandoned: the thread producing them failed") {}
};

// How many leading rows of a matrix are ready, for one thread to fill them while another already
// uses the first ones: the pipeline reads A's rows from the file while the GEMM multiplies those
// that have arrived, and writes C's rows while the GEMM still computes the rest. Rows become
// ready in order. publish() may be called from a CUDA host callback: it only locks and notifies.
class RowProgress {
 public:
  // Rows [0, rows) are ready.
  void publish(std::int64_t rows) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_ = std::max(ready_, rows);
    }
    changed_.notify_all();
  }
  // The producer failed: waiters throw RowsAbandoned instead of waiting for ever.
  void abandon() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;
    }
    changed_.notify_all();
  }
  bool abandoned() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return abandoned_;
  }
  // Blocks until at least `rows` rows are ready; returns how many are.
  std::int64_t wait_for(std::int64_t rows) const {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return ready_ >= rows || abandoned_; });
    if (ready_ < rows) throw RowsAbandoned();
    return ready_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::int64_t ready_ = 0;
  bool abandoned_ = false;
};

// C = A * B, all row-major and contiguous on the host: A is m x k, B is k x n, C is m x n.
// Streaming (optional): with a_rows, A's rows arrive while the GEMM runs, and the backend waits
// for each row it is about to use (B must be complete); with c_rows, the backend publishes C's
// rows as they reach host memory (before the call returns), so the caller can store them while
// the rest is computed.
struct GemmProblem {
  DType dtype = DType::f64;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const RowProgress* a_rows = nullptr;
  RowProgress* c_rows = nullptr;
};

// A GEMM staged through the backend's own buffers (Backend::gemm_staged): instead of whole host
// arrays, the caller produces A's and B's rows on request and takes C's rows as they come back,
// in pieces of at most stage_piece_bytes() (a single row may be larger). On a GPU the pieces pass
// through a few small page-locked buffers, so no page-locked copy of the block is ever made:
// allocating and freeing one cost about 0.2 s per GiB, more than the copies it speeds up.
// fill_b, then fill_a, are called on the thread that called gemm_staged, each in row order;
// take_c on one thread of the backend's, in row order, while the fills go on. C is complete in
// the caller's hands when gemm_staged returns. A failure of either side stops the other.
struct StagedProblem {
  DType dtype = DType::f64;
  std::int64_t m = 0, n = 0, k = 0;
  std::function<void(std::int64_t row0, std::int64_t rows, void* into)> fill_a;        // rows of A, k wide
  std::function<void(std::int64_t row0, std::int64_t rows, void* into)> fill_b;        // rows of B, n wide
  std::function<void(std::int64_t row0, std::int64_t rows, const void* from)> take_c;  // rows of C, n wide
  // Optional, for a float32 C stored as a 16-bit float: a backend that can round C's rows to
  // `c_rounded` as they leave its memory (to nearest, ties to even; beyond the type's range Inf:
  // as io::convert_block rounds on the host) hands them, so rounded, to take_c_rounded instead of
  // take_c: half the bytes to copy and write, and no pass over them on the host. A backend that
  // cannot (the CPU's) hands them to take_c as computed.
  enum class Rounded { none, f16, bf16 };
  Rounded c_rounded = Rounded::none;
  std::function<void(std::int64_t row0, std::int64_t rows, const void* from)> take_c_rounded;  // 2-byte values
  // Optional, for float32 products of A and B both stored as this 16-bit float (the job's
  // half_inputs, alpha 1), multiplied by a kernel that rounds its inputs to it (cublas-f16 /
  // cublas-bf16, which then changes no value): a backend that can multiply them as stored asks
  // fill_a_half / fill_b_half for their 2-byte values instead of fill_a / fill_b (half the bytes
  // read and copied up, no widening on the host). Either both pairs are asked, or only fill_a/b.
  Rounded operands = Rounded::none;
  std::function<void(std::int64_t row0, std::int64_t rows, void* into)> fill_a_half, fill_b_half;
};

// Bytes of a staged piece: 32 MiB, or TESSERA_STAGE_BYTES (a test and diagnostic knob; an
// integer >= 1). Throws InputError for a value that is not one.
std::size_t stage_piece_bytes();
// Rows of `row_bytes` each in one piece (at least 1).
std::int64_t stage_piece_rows(std::size_t row_bytes);

// One operand of a GEMM on memory a caller holds (Backend::gemm_in_place): the matrix as stored,
// row-major, `rows` x `cols`, rows `ld` elements apart, in host memory or in the backend's GPU's
// memory (`device`), and whether the GEMM takes its transpose.
struct HeldMatrix {
  const void* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;
  bool device = false;
  bool transposed = false;
  bool conjugated = false;  // with transposed: op(X) = X^H (complex dtypes; a real X's transpose)
};

// C = alpha op(A) op(B) + beta C on the caller's memory, each matrix on the host or on the GPU
// (issue 42: arrays used in place). op(A) is m x k, op(B) k x n, C m x n with rows `ldc` apart.
// `stream` (an opaque cudaStream_t; nullptr: the backend's own) orders the work after the
// caller's: with `wait` false and all three matrices on the GPU, the call returns once the work is
// enqueued there (the caller's stream holds it); else it returns when C is complete. With
// `refuse_nonfinite`, A and B are scanned for NaN and Inf and the product refused when they hold
// any: C untouched, except where the call is enqueued with all three on the GPU and beta 0 (the
// scan then runs beside the product, which writes C meanwhile: C holds it, NaN/Inf carried).
struct HeldProblem {
  DType dtype = DType::f64;
  std::int64_t m = 0, n = 0, k = 0;
  HeldMatrix a, b;
  void* c = nullptr;
  std::int64_t ldc = 0;
  bool c_device = false;
  double alpha = 1, beta = 0;
  double alpha_imag = 0, beta_imag = 0;  // complex dtypes only (0 for real ones)
  void* stream = nullptr;
  bool wait = true;
  bool refuse_nonfinite = true;
};

struct PhaseTime {
  std::string name;  // "compute" on the CPU; "h2d", "kernel", "d2h" on a GPU
  double seconds = 0;
};

// How the CUDA backend splits large GEMMs, shared with device_bytes (the footprint model's figure).
// In-core GEMMs whose A + B + C reach kPipelineMinBytes run in at least kPipelineTiles row tiles,
// so the copies of one tile overlap the kernel of another. A product kept on the device
// (gemm_on_device) runs in kKeptChunks chunks of K (two in flight) once K reaches kKeptChunkMinK.
inline constexpr std::size_t kPipelineMinBytes = std::size_t{256} << 20;
inline constexpr std::int64_t kPipelineTiles = 4;
// A staged GEMM on the GPU (StagedProblem) runs in tiles of A's rows of about kStagedTileBytes
// (at least kPipelineTiles of them), through kStagingSlots page-locked slots of
// stage_piece_bytes() (shared with the footprint model).
inline constexpr std::size_t kStagedTileBytes = std::size_t{128} << 20;
inline constexpr int kStagingSlots = 9;
inline constexpr std::int64_t kKeptChunks = 4;
inline constexpr std::int64_t kKeptChunkMinK = 2048;

// Where a rank sits on its node; a GPU backend picks its device from this.
struct Placement {
  int local_rank = 0;
  int local_size = 1;
  // GPU memory a rank's GEMM may use, in bytes (--gpu-memory); 0: what the GPU has free. A
  // block that does not fit is computed out of core, in tiles streamed through the GPU.
  std::size_t gpu_memory_limit = 0;
};

// A GPU as nvidia-smi names it: its UUID ("GPU-...") and PCI bus id ("0000:1b:00.0"); empty
// where there is none (the CPU, an idle rank) or the driver does not say.
struct DeviceIdentity {
  std::string uuid;
  std::string pci_bus_id;
};

// Host memory for a rank's A, B and C. On a GPU backend it is page-locked, so the copies to and
// from the device run at full speed without registering the caller's memory on the fly; the
// pinning cost is paid once, where the memory is allocated (the read phase).
class HostBuffer {
 public:
  using Free = void (*)(void*);
  HostBuffer() = default;
  HostBuffer(void* data, std::size_t bytes, Free free) : data_(data), bytes_(bytes), free_(free) {}
  ~HostBuffer() {
    if (data_) free_(data_);
  }
  HostBuffer(HostBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), free_(o.free_) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(free_, o.free_);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(data_); }
  std::size_t size() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Free free_ = nullptr;
};

// Plain (pageable) host memory; throws std::bad_alloc.
HostBuffer allocate_pageable(std::size_t bytes);

// Device-side work of another layer (an NCCL call of the comm layer), enqueued on `stream`: an
// opaque cudaStream_t, ordered after (and before) the backend's own work on the same memory.
using DeviceWork = std::function<void(void* stream)>;

// A C block (m x n), summed on the device over panels of K (a 2-D algorithm's product):
// C += A_p B_p, A_p m x w and B_p w x n (w <= max_w), each panel arriving either from this rank's
// own blocks (stage) or from another rank (into host(slot) by MPI, then upload; or straight into
// device(slot) by CUDA-aware MPI, or by a transfer). Two slots: while one multiplies, the next
// panel arrives in the other. The CPU backend does the same on host memory, synchronously.
// Enum `Panel` names A_p or B_p.
class PanelProduct {
 public:
  enum Panel { kA = 0, kB = 1 };
  static constexpr int kSlots = 2;
  virtual ~PanelProduct() = default;
  // Host staging of a slot (page-locked on a GPU): the panel, row-major and contiguous (m x w or
  // w x n). Filled by the caller before upload(). On a GPU only when the product was made with
  // host_staging (Backend::panel_product); else it throws.
  virtual void* host(int slot, Panel which) = 0;
  // Device memory of a slot, for CUDA-aware MPI; the host staging on the CPU backend.
  virtual void* device(int slot, Panel which) = 0;
  // Blocks until the slot's last multiply (and the copies into it) are done: it may be refilled.
  virtual void wait_slot(int slot) = 0;
  // Enqueue: the panel comes from the caller's memory, `rows` x `cols` at `src` with a row
  // stride of `ld` elements (e.g. w columns of this rank's A block).
  virtual void stage(int slot, Panel which, const void* src, std::int64_t ld, std::int64_t rows, std::int64_t cols) = 0;
  // Enqueue: host(slot, which) -> device, `elements` of it. No-op on the CPU.
  virtual void upload(int slot, Panel which, std::int64_t elements) = 0;
  // Blocks until what was staged or uploaded into the slot is on the device (before CUDA-aware
  // MPI sends from device()).
  virtual void wait_arrived(int slot) = 0;
  // Enqueue: `work` on the slot's device panels (e.g. an NCCL broadcast into them), after the
  // slot's last multiply and what was staged into it, before its next multiply; timed as "bcast".
  // Throws on the CPU.
  virtual void transfer(int slot, const DeviceWork& work) = 0;
  // Enqueue C += A_p B_p from the slot, w = the panel width, after the panel has arrived.
  virtual void multiply(int slot, std::int64_t w) = 0;
  // Waits for everything, copies C into the host C given at creation; the device time of each
  // kind of step, summed over the panels (they overlap, so the sum may exceed the wall time):
  // "h2d", "bcast" (transfers), "kernel", "d2h" (GPU); "kernel" (CPU).
  virtual std::vector<PhaseTime> finish() = 0;
  // C on the device (m x n), final after finish(): a gather over the devices sends it from
  // there, and on rank 0 receives the other blocks into it. The host C on the CPU.
  virtual void* device_c() = 0;
};

// A product C = A * B kept on the device
// (Backend::gemm_on_device), for the comm layer to sum over the ranks' devices, then copied down.
class DeviceProduct {
 public:
  virtual ~DeviceProduct() = default;
  // The times of the product: "h2d", "kernel".
  virtual std::vector<PhaseTime> compute_phases() const = 0;
  // C on the device, m x n.
  virtual void* device_c() = 0;
  // Enqueue: `work` on C (e.g. an NCCL sum of it), after the product; timed as phase `name`.
  virtual void transfer(const std::string& name, const DeviceWork& work) = 0;
  // Waits for everything and copies C to `host` ("d2h"), unless it is nullptr; frees C. The
  // phases of the transfers, then "d2h".
  virtual std::vector<PhaseTime> finish(void* host) = 0;
  // The same for rows [row0, row0 + rows) of C only (a rank's piece of a band summed with a
  // reduce-scatter), copied to `host` (rows x n).
  virtual std::vector<PhaseTime> finish_rows(void* host, std::int64_t row0, std::int64_t rows) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Kind kind() const = 0;
  std::string name() const { return kind_name(kind()); }  // "cpu" or "cuda"
  virtual std::string device() const = 0;                 // e.g. "cpu (2 threads)" or "NVIDIA H200"
  virtual int device_id() const { return -1; }
  virtual DeviceIdentity device_identity() const { return {}; }
  virtual std::vector<std::string> kernels() const = 0;  // selectable names, first is the default
  virtual std::string default_kernel() const { return kernels().front(); }
  // Every `kernel` a backend takes is a resolved name of its own (kernels()): "auto" is resolved
  // once, for the whole job, before a backend sees it (resolve_kernel below); a backend resolves
  // nothing and refuses any other name (InputError) at the GEMM that would use it.
  // Starts what `kernel` needs before its first launch on a thread of its own, so that it runs
  // beside the caller's next steps (the CUDA backend loads cuBLAS, ~0.3 s, and runs one small GEMM
  // of `dtype`, which takes cuBLAS's one-time set-up, 40-80 ms, off the first timed GEMM, while the
  // inputs are read); the GEMM calls wait for it before they time anything. Nothing on the CPU.
  virtual void prepare(const std::string& kernel, DType dtype) { (void)kernel, (void)dtype; }
  // Throws InputError for an unknown kernel name, DeviceError for device failures.
  virtual std::vector<PhaseTime> gemm(const std::string& kernel, const GemmProblem& p) = 0;
  // Host memory for the problems this backend will compute (pinned on a GPU backend).
  virtual HostBuffer allocate_host(std::size_t bytes) { return allocate_pageable(bytes); }
  // Whether gemm_staged stages this GEMM through small buffers of its own (a GPU with room for
  // all of B and two tiles of A's and C's rows); false: it reads A and B whole into plain memory
  // first, as the CPU does.
  virtual bool stages(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const {
    (void)dtype, (void)m, (void)n, (void)k;
    return false;
  }
  // The GEMM of StagedProblem. This default reads A and B whole into plain memory, in pieces,
  // runs gemm(), and hands C back in pieces. Phases as gemm()'s.
  virtual std::vector<PhaseTime> gemm_staged(const std::string& kernel, const StagedProblem& p);
  // Peak device memory in use while this backend computed, less what was in use when it started
  // (read from the device, so it includes library workspaces; 0 on the CPU).
  virtual std::int64_t peak_device_bytes() const { return 0; }
  // What the last GEMM's kernel chose at run time and the error it guarantees (RankRecord::precision);
  // empty for kernels whose name says it all.
  virtual std::string precision() const { return {}; }
  // Called first on a thread of the caller's that frees or touches this backend's memory: a new
  // thread starts on GPU 0, and a CUDA call there would open a context (~0.5 GiB) on it.
  virtual void enter_thread() const {}
  // Human-readable warnings raised while setting up (e.g. "2 ranks share GPU 0").
  virtual std::vector<std::string> warnings() const { return {}; }

  // A stream of this backend's device (an opaque cudaStream_t) for another layer's device work
  // between the backend's own steps (setting NCCL groups up, sending C blocks); nullptr on the CPU.
  virtual void* device_stream() const { return nullptr; }

  // --- HeldProblem: whether this backend multiplies the caller's memory where it lies with
  // `kernel` (a GPU whose scratch for the packed operands and C fits `limit`-free memory; the CPU
  // with its BLAS's own GEMM, which takes leading dimensions, op, alpha and beta); false: the
  // caller packs the operands and multiplies them on the host. The CPU never scans for NaN/Inf
  // here (p.refuse_nonfinite is the caller's to do first).
  virtual bool holds_in_place(const std::string& kernel, const HeldProblem& p) const {
    (void)kernel;
    (void)p;
    return false;
  }
  // The product of HeldProblem. Phases "h2d", "kernel", "d2h" when waited for, none otherwise.
  // Throws InputError for a matrix it cannot use (a device pointer that is not this GPU's memory,
  // NaN or Inf where refused: "A holds 3 non-finite value(s)..., the first at (i, j)").
  virtual std::vector<PhaseTime> gemm_in_place(const std::string& kernel, const HeldProblem& p);

  // --- C = A * B left on the device (the GPU; the CPU throws), e.g. a partial product. p.c is
  // not written: on the root it may name the host C that DeviceProduct::finish will fill (the
  // backend may prepare it, e.g. page-lock it while the kernel runs), elsewhere nullptr.
  virtual std::unique_ptr<DeviceProduct> gemm_on_device(const std::string& kernel, const GemmProblem& p);

  // --- C summed over panels of K (PanelProduct). host_c: the m x n C block in host memory, zero on entry (the CPU
  // sums into it; a GPU copies its sum there in finish()). host_staging: panels will arrive
  // through PanelProduct::host() (host MPI), so a GPU page-locks staging for both slots; without
  // it (panels arrive in device memory) host() must not be called on a GPU. Throws DeviceError
  // when C and two slots of panels do not fit the GPU (the message says how much is missing).
  virtual std::unique_ptr<PanelProduct> panel_product(const std::string& kernel, DType dtype, std::int64_t m,
                                                      std::int64_t n, std::int64_t max_w, void* host_c,
                                                      bool host_staging) = 0;
};

// A backend of `kind` (nullopt: "auto", cuda when a GPU is visible and tessera was built with CUDA).
std::unique_ptr<Backend> make_backend(std::optional<Kind> kind, const Placement& where);

// Over what `auto` weighs a library's one-time load against its kernel's speed (backend/tuning.hpp,
// whole_job_kernel). `job`: a `tessera run` process, whose GEMMs are all known: the load counts
// against them, and a job that cuBLAS would not finish sooner does not load it. `process`: a
// process that keeps its backend from call to call (tessera::multiply on buffers, tessera.matmul,
// the ScaLAPACK drop-in), where one call cannot see the calls to come and the load, paid once,
// serves them all: the tuned rates alone decide (on the H200's file, cuBLAS at 1024^3 f32 runs
// 36.9 TFLOP/s against 32.5 for the fastest own kernel; weighing its load against one 1024^3
// product chose the own kernel for every call of a loop).
enum class LoadHorizon { job, process };

// The kernel `kernel` stands for ("auto": the backend's choice, on a GPU the tuned winner for the
// GPU node-local rank 0 computes on) on an m x n x k GEMM of `dtype`; another name as given.
// Starts no backend: the plan asks it once, for the whole job (algorithms/setting.hpp).
std::string resolve_kernel(Kind kind, const std::string& kernel, DType dtype, std::int64_t m, std::int64_t n,
                           std::int64_t k, LoadHorizon horizon = LoadHorizon::job);

// Backend names compiled into this build.
std::vector<std::string> compiled_backends();
// --backend's words: auto and every kind's name (a kind this build lacks is refused when it starts).
std::vector<std::string> backend_words();

// A kernel of a backend, as `tessera info` lists it: listed from the registries, without a device.
struct KernelInfo {
  Kind backend = Kind::cpu;
  std::string name, summary;
  std::vector<std::string> dtypes;  // "f32", "f64": the dtypes it multiplies
  bool opt_in = false;              // reduced precision: run only when named, never by `auto`
  bool vendor = false;              // a library's call (the BLAS, cuBLAS): the baseline `bench` compares with
  std::vector<std::string> needs;   // what it needs beyond the backend: "sm_90a", "cuBLAS"
};
// Every kernel this build has, the CPU's first (its default first), then the GPU's in bench order.
// A build without CUDA knows no GPU kernel: --kernel takes only the CPU's there.
const std::vector<KernelInfo>& kernel_catalog();  // made once (every call of `run` names it)
// The names of `kind`'s kernels in this build (the CPU's default first); none for cuda without CUDA.
std::vector<std::string> kernel_names(Kind kind);
// InputError unless `kernel` is a resolved kernel name of `kind` (not "auto"), naming the ones it
// has; nothing for cuda in a build without CUDA (which refuses the backend when it starts).
void check_kernel(Kind kind, const std::string& kernel);

// A product as a backend allocates device memory for it (Backend::gemm, panel_product,
// gemm_on_device), sized before anything is allocated.
struct DeviceUse {
  enum What {
    gemm,           // C = A * B of an m x n x k GEMM; out of core within `limit` (> 0), else pipelined where large
    panel_product,  // C (m x n) summed over panels of K at most k wide, two slots of them
    kept_product,   // C (m x n) of an m x n x k GEMM kept on the device, K in chunks where long
  };
  What what = gemm;
  std::string kernel;  // the GPU kernel: one that adds into C needs no scratch C
  DType dtype = DType::f64;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t limit = 0;  // gemm: the bytes it may use (--gpu-memory); 0: in core
};

// Device bytes the backend of `kind` holds for `use` at its peak, as it allocates them (CUTLASS's
// get_workspace_size): the one figure the footprint model, `auto`, the dry run and the backend's
// own refusals all use. 0 on the CPU.
std::int64_t device_bytes(Kind kind, const DeviceUse& use);

// Whether the GPU kernel `kernel` ("auto": the built-in default for `dtype`) adds into C itself,
// so products summed over K (panel products, chunked products kept on the device) need no scratch C. False
// in a build without CUDA (the dry run then counts the scratch C).
bool gpu_kernel_accumulates(const std::string& kernel, DType dtype);

// Number of visible GPUs (0 when built without CUDA or when none is visible).
int visible_gpu_count();

// The CPU backend's BLAS may use `threads` threads (the process's share of the node's cores).
void use_cpu_threads(int threads);

// The calling thread's current CUDA device (cudaGetDevice): the GPU a caller's arrays in GPU
// memory are on, as its library set it (0 where CUDA cannot say, or without CUDA).
int current_gpu();

// Copies `bytes` of GPU memory (any visible device's, as CUDA's unified addressing finds it) to
// host memory, waiting for it: a distributed product's device blocks, exchanged through the host.
// Throws Error in a build without CUDA, DeviceError when the copy fails.
void copy_device_to_host(void* host, const void* device, std::size_t bytes);

// Description of the visible GPUs, one line each (empty when none).
std::vector<std::string> describe_gpus();

// Visible GPU `device`'s UUID and PCI bus id (empty without CUDA). Starts the driver. Never throws.
DeviceIdentity gpu_identity(int device);

// The backend of a rank the algorithm leaves idle: it computes nothing and touches no device (a
// GPU's driver and context cost ~0.1 s each, and a second process starting them slows the busy
// ranks' start). Of `kind`, the job's backend; device "idle", id -1; any GEMM asked of it is a
// bug in tessera.
std::unique_ptr<Backend> make_idle_backend(Kind kind);

// Starts the CUDA driver and the primary context of the GPU that node-local rank `local_rank`
// will use (local_rank modulo the visible GPUs, as the cuda backend chooses) on a thread of its
// own, so that CUDA's start-up (~0.1 s of driver and ~0.1 s of context on the H200) runs beside
// MPI's and the job's plan (the runtime is thread-safe: the plan's queries of the devices may
// run meanwhile). Nothing in a build without CUDA; errors are left to the calls that follow,
// which meet and report them. finish_gpu_start() waits for that thread: make_backend calls it
// before the backend's first CUDA call, and the process before it ends (a second call does
// nothing). gpu_start_pending(): the thread still works (the job reads ahead meanwhile,
// job/read_ahead.hpp).
void start_gpu_early(int local_rank);
void finish_gpu_start();
bool gpu_start_pending();

}  // namespace tessera::backend
