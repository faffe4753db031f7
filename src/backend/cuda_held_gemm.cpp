// The CUDA backend's GEMM on memory a caller holds (cuda_gemm.hpp's gemm_held, backend.hpp's
// HeldProblem): operands on the GPU are used where they lie; those on the host, transposed or
// strided are copied or packed into scratch kept from call to call; the kernel writes C itself
// where it can (alpha 1, beta 0, C packed on the GPU), else a scratch C that alpha and beta then
// fold into C. Everything runs on the caller's stream, after the previous call's work.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "backend/cuda_gemm.hpp"
#include "backend/step_times.hpp"
#include "core/error.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gpu_layout.hpp"

namespace tessera::backend {
namespace {

constexpr const char* kNames[] = {"A", "B"};

// The kernels take the addresses cudaMalloc returns (256-byte aligned): their vector loads and
// Hopper's TMA need 16 bytes at least. A tensor view that starts elsewhere is copied.
constexpr std::uintptr_t kAlignment = 256;
bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kAlignment == 0; }

bool used_as_is(const HeldMatrix& x) { return x.device && !x.transposed && x.ld == x.cols && aligned(x.data); }
// A product of GPU memory ordered on the caller's stream, A and B to be scanned for NaN and Inf:
// the scan runs on a stream of its own beside the GEMM and the host waits for the scan alone,
// while the GEMM runs: no gap on the GPU for the round trip, and the host's own time per call
// hidden behind the product, as for a call that scans nothing.
bool overlapped_scan(const HeldProblem& p) {
  return p.refuse_nonfinite && !p.wait && p.a.device && p.b.device && p.c_device;
}
// With beta != 0 the old C is an input: beside the scan the GEMM then writes its scratch C,
// folded into C only once the host has the verdict, so a refusal leaves C as it was. With beta == 0
// C is written while the scan runs (a refusal leaves alpha times the product as IEEE arithmetic
// gives it, NaN and Inf carried through, and raises): no C copy per call where the kernel can
// write C itself.
bool holds_c(const HeldProblem& p) { return overlapped_scan(p) && p.beta != 0; }
// The kernel writes C itself (else a scratch C that alpha and beta then fold into C; always so
// where holds_c, whose beta is not 0).
bool direct_c(const HeldProblem& p) {
  return p.c_device && p.alpha == 1 && p.beta == 0 && p.ldc == p.n && aligned(p.c);
}

// Bytes from a matrix's first element to one past its last (rows `ld` apart).
std::size_t span_bytes(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::size_t es) {
  return rows == 0 || cols == 0 ? 0 : static_cast<std::size_t>((rows - 1) * ld + cols) * es;
}

std::size_t bytes_of(const HeldMatrix& x, DType dtype) {
  return static_cast<std::size_t>(x.rows) * static_cast<std::size_t>(x.cols) * dtype_size(dtype);
}

// Scratch sizes: op(A), op(B) packed; the stored form of a host operand that is transposed on the
// GPU (and of a host C_old with beta != 0); the scratch C.
struct Needs {
  std::size_t a = 0, b = 0, stored = 0, c = 0, found = 0;
};

Needs needs_of(const HeldProblem& p) {
  Needs need;
  const std::size_t es = dtype_size(p.dtype), c_bytes = static_cast<std::size_t>(p.m * p.n) * es;
  if (!used_as_is(p.a)) need.a = bytes_of(p.a, p.dtype);
  if (!used_as_is(p.b)) need.b = bytes_of(p.b, p.dtype);
  for (const HeldMatrix* x : {&p.a, &p.b})
    if (!x->device && x->transposed) need.stored = std::max(need.stored, bytes_of(*x, p.dtype));
  if (!direct_c(p)) need.c = c_bytes;
  if (!p.c_device && p.beta != 0) need.stored = std::max(need.stored, c_bytes);
  if (p.refuse_nonfinite) need.found = 2 * sizeof(kernels::NonfiniteFound);
  return need;
}

void* grown(kernels::DeviceBuffer& buffer, std::size_t bytes, const std::string& what) {
  if (buffer.bytes() < bytes) {
    buffer = kernels::DeviceBuffer();  // the old one freed before the larger is taken
    buffer = kernels::DeviceBuffer(bytes, what);
  }
  return buffer.get();
}

// " of a MxNxK dtype product", for what a scratch buffer holds (its allocation's error message).
std::string of_product(const HeldProblem& p) {
  return fmt::format(" of a {}x{}x{} {} product", p.m, p.n, p.k, dtype_name(p.dtype));
}

// The same, its description made only where the buffer grows (not on every call of a loop of
// small products that finds its scratch large enough).
void* grown(kernels::DeviceBuffer& buffer, std::size_t bytes, const char* what, const HeldProblem& p) {
  return buffer.bytes() < bytes ? grown(buffer, bytes, what + of_product(p)) : buffer.get();
}

// A device view of a stored matrix: where it is and its leading dimension.
struct View {
  const void* data = nullptr;
  std::int64_t ld = 0;
};

// op(X) packed on the device (X itself where it already is), and X as stored on the device (for
// the scan); host operands copied up first.
struct Placed {
  const void* op = nullptr;
  View stored;
};

// Host rows to and from packed device rows: through the staging lanes from stage_min_bytes on
// (page-locked buffers of tessera's, the caller's memory left as it is), else one
// cudaMemcpy2DAsync (page-locked where HostRegistration made it so). Stream-ordered on `s` either
// way; down() returns when the host holds the rows where the lanes carried them.
struct HostCopies {
  HeldScratch& scratch;
  int gpu;
  static bool staged(std::int64_t rows, std::size_t row_bytes) {
    return HostStaging::takes(rows, row_bytes) && static_cast<std::size_t>(rows) * row_bytes >= stage_min_bytes();
  }
  HostStaging& lanes() const {
    if (!scratch.staging) scratch.staging = std::make_unique<HostStaging>();
    return *scratch.staging;
  }
  void up(const void* host, std::size_t ld_bytes, std::int64_t rows, std::size_t row_bytes, void* device,
          cudaStream_t s, cudaEvent_t after = nullptr) const {
    if (rows <= 0 || row_bytes == 0) return;
    if (staged(rows, row_bytes)) return lanes().up(gpu, host, rows, row_bytes, ld_bytes, device, s, after);
    CUDA_CHECK(cudaMemcpy2DAsync(device, row_bytes, host, ld_bytes, row_bytes, static_cast<std::size_t>(rows),
                                 cudaMemcpyHostToDevice, s));
  }
  void down(const void* device, std::int64_t rows, std::size_t row_bytes, void* host, std::size_t ld_bytes,
            cudaStream_t s) const {
    if (rows <= 0 || row_bytes == 0) return;
    if (staged(rows, row_bytes)) return lanes().down(gpu, device, rows, row_bytes, host, ld_bytes, s);
    CUDA_CHECK(cudaMemcpy2DAsync(host, ld_bytes, device, row_bytes, row_bytes, static_cast<std::size_t>(rows),
                                 cudaMemcpyDeviceToHost, s));
  }
};

// A host range to page-lock for its copy: none where the staging lanes carry it.
kernels::HostRegistration pin_unless_staged(const void* p, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                            std::size_t es) {
  if (HostCopies::staged(rows, static_cast<std::size_t>(cols) * es)) return {};
  return kernels::HostRegistration(p, span_bytes(rows, cols, ld, es), held_pin_min_bytes());
}

Placed place(const HeldMatrix& x, DType dtype, void* slot, void* stored_slot, cudaStream_t s,
             const HostCopies& copies) {
  const std::size_t es = dtype_size(dtype);
  if (used_as_is(x)) return {x.data, {x.data, x.ld}};
  View stored{x.data, x.ld};
  if (!x.device) {
    // Up as stored, packed: into the slot itself when no transpose follows.
    void* into = x.transposed ? stored_slot : slot;
    copies.up(x.data, static_cast<std::size_t>(x.ld) * es, x.rows, static_cast<std::size_t>(x.cols) * es, into, s);
    stored = {into, x.cols};
    if (!x.transposed) return {into, stored};
  }
  if (x.transposed) {
    kernels::gpu_transpose(dtype, x.rows, x.cols, stored.data, stored.ld, slot, s);
  } else if (x.rows > 0 && x.cols > 0) {  // on the device, rows apart: packed
    CUDA_CHECK(cudaMemcpy2DAsync(slot, static_cast<std::size_t>(x.cols) * es, x.data,
                                 static_cast<std::size_t>(x.ld) * es, static_cast<std::size_t>(x.cols) * es,
                                 static_cast<std::size_t>(x.rows), cudaMemcpyDefault,
                                 s));  // device, managed or mapped host memory alike
  }
  return {slot, stored};
}

// A waited call's step times (its four events: made only then, a stream-ordered call of GPU
// memory creates none).
struct StepEvents {
  kernels::Event start, placed, computed, finished;
};

void check_addressable(const void* ptr, bool device, int gpu, const char* name) {
  const char* why = "";
  if (device && ptr && !kernels::gpu_addressable(ptr, gpu, &why))
    throw InputError(fmt::format("{} was given as memory of GPU {}, but its address is {}", name, gpu, why));
}

// The scan's verdict, read after the stream got there: InputError for NaN or Inf in A or B, by its
// stored coordinates.
// `per_element`: values the scan counted per element (2 for a complex matrix scanned as its parts).
void refuse_found(const kernels::NonfiniteFound* found, const HeldProblem& p, cudaStream_t s, int per_element = 1) {
  kernels::NonfiniteFound host[2] = {};
  CUDA_CHECK(cudaMemcpyAsync(host, found, sizeof host, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < 2; ++i) {
    if (host[i].count == 0) continue;
    const std::int64_t cols = std::max<std::int64_t>((i == 0 ? p.a : p.b).cols, 1);
    const auto first = static_cast<std::int64_t>(host[i].first);
    throw InputError(
        fmt::format("{} holds {} non-finite value(s) (NaN/Inf){}, the first at ({}, {}); allow_nonfinite "
                    "multiplies them",
                    kNames[i], host[i].count, per_element == 2 ? " in its elements' real and imaginary parts" : "",
                    first / cols, first % cols / per_element));
  }
}

// A complex product (DType c64, c128) through cuBLAS: GPU operands and C used where they lie with
// their leading dimensions and op (no packing, no transpose pass: cuBLAS takes both), host ones
// copied up packed into the scratch (a host C_old only where beta != 0) and C copied down. The NaN
// and Inf scan reads a complex matrix as the real one of twice its columns.
std::vector<PhaseTime> gemm_held_complex(Gpu& gpu, HeldScratch& scratch, const HeldProblem& p) {
  const cudaStream_t s = p.stream ? static_cast<cudaStream_t>(p.stream) : gpu.stream.get();
  const std::size_t es = dtype_size(p.dtype);
  const std::string of_gemm = of_product(p);
  if (scratch.used) CUDA_CHECK(cudaStreamWaitEvent(s, scratch.done.get(), 0));
  const auto slot = [&](kernels::DeviceBuffer& buffer, bool needed, std::size_t bytes, const std::string& what) {
    return needed ? grown(buffer, bytes, what) : nullptr;
  };
  void* slot_a = slot(scratch.a, !p.a.device, bytes_of(p.a, p.dtype), "A" + of_gemm);
  void* slot_b = slot(scratch.b, !p.b.device, bytes_of(p.b, p.dtype), "B" + of_gemm);
  void* slot_c = slot(scratch.c, !p.c_device, static_cast<std::size_t>(p.m * p.n) * es, "a scratch C" + of_gemm);
  auto* found = static_cast<kernels::NonfiniteFound*>(
      slot(scratch.found, p.refuse_nonfinite, 2 * sizeof(kernels::NonfiniteFound), "a NaN/Inf count"));
  const HostCopies copies{scratch, gpu.device};
  kernels::HostRegistration pin_a, pin_b, pin_c;
  const double pin_seconds = host_seconds([&] {
    if (!p.a.device) pin_a = pin_unless_staged(p.a.data, p.a.rows, p.a.cols, p.a.ld, es);
    if (!p.b.device) pin_b = pin_unless_staged(p.b.data, p.b.rows, p.b.cols, p.b.ld, es);
    if (!p.c_device) pin_c = pin_unless_staged(p.c, p.m, p.n, p.ldc, es);
  });
  const bool waited = p.wait || !p.c_device || !p.a.device || !p.b.device;
  const std::size_t c_row = static_cast<std::size_t>(p.n) * es, ldc_bytes = static_cast<std::size_t>(p.ldc) * es;
  std::optional<StepEvents> t;
  if (waited) {
    t.emplace();
    t->start.record(s);
  }
  try {
    // Up, packed, as stored: {data, ld} on the device.
    const auto up = [&](const HeldMatrix& x, void* into) -> View {
      if (x.device) return {x.data, x.ld};
      copies.up(x.data, static_cast<std::size_t>(x.ld) * es, x.rows, static_cast<std::size_t>(x.cols) * es, into, s);
      return {into, x.cols};
    };
    const View a = up(p.a, slot_a), b = up(p.b, slot_b);
    if (p.refuse_nonfinite) {
      const DType part = real_of(p.dtype);
      kernels::gpu_count_nonfinite(part, p.a.rows, 2 * p.a.cols, a.data, 2 * a.ld, found, s);
      kernels::gpu_count_nonfinite(part, p.b.rows, 2 * p.b.cols, b.data, 2 * b.ld, found + 1, s);
      HeldProblem parts = p;  // the scan's columns are the parts: its coordinates halved back
      parts.a.cols *= 2, parts.b.cols *= 2;
      refuse_found(found, parts, s, 2);
    }
    void* c = p.c_device ? p.c : slot_c;
    const std::int64_t ldc = p.c_device ? p.ldc : p.n;
    const bool reads_c = p.beta != 0 || p.beta_imag != 0;
    if (!p.c_device && reads_c) copies.up(p.c, ldc_bytes, p.m, c_row, slot_c, s);
    if (waited) t->placed.record(s);
    const auto op = [](const HeldMatrix& x) { return x.conjugated ? 'C' : x.transposed ? 'T' : 'N'; };
    kernels::GpuComplexGemm g;
    g.dtype = p.dtype, g.op_a = op(p.a), g.op_b = op(p.b);
    g.m = p.m, g.n = p.n, g.k = p.k;
    g.a = a.data, g.lda = a.ld, g.b = b.data, g.ldb = b.ld, g.c = c, g.ldc = ldc;
    g.alpha[0] = p.alpha, g.alpha[1] = p.alpha_imag, g.beta[0] = p.beta, g.beta[1] = p.beta_imag;
    g.stream = s;
    try {
      kernels::gpu_complex_gemm(g, gpu.context);
    } catch (const std::length_error& e) {
      throw InputError(std::string(e.what()) + of_gemm);
    }
    if (waited) t->computed.record(s);
    if (!p.c_device) copies.down(slot_c, p.m, c_row, p.c, ldc_bytes, s);
    scratch.done.record(s);
    scratch.used = true;
  } catch (...) {
    synchronize_quietly({s});
    throw;
  }
  if (!waited) return {};
  t->finished.record(s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  gpu.note_peak();
  return {{"h2d", pin_seconds + t->placed.seconds_since(t->start)},
          {"kernel", t->computed.seconds_since(t->placed)},
          {"d2h", t->finished.seconds_since(t->computed)}};
}

}  // namespace

// Device bytes the scratch would grow by for p (a buffer too small is replaced whole).
std::size_t held_bytes_missing(const HeldScratch& scratch, const HeldProblem& p) {
  const Needs need = needs_of(p);
  const auto more = [](std::size_t want, const kernels::DeviceBuffer& have) { return want > have.bytes() ? want : 0; };
  return more(need.a, scratch.a) + more(need.b, scratch.b) + more(need.c, scratch.c) +
         more(need.stored, scratch.stored) + more(need.found, scratch.found);
}

std::vector<PhaseTime> gemm_held(Gpu& gpu, HeldScratch& scratch, const std::string& kernel, const HeldProblem& p) {
  check_addressable(p.a.data, p.a.device, gpu.device, "A");
  check_addressable(p.b.data, p.b.device, gpu.device, "B");
  check_addressable(p.c, p.c_device, gpu.device, "C");
  if (is_complex(p.dtype)) return gemm_held_complex(gpu, scratch, p);
  const cudaStream_t s = p.stream ? static_cast<cudaStream_t>(p.stream) : gpu.stream.get();
  const std::size_t es = dtype_size(p.dtype);
  const bool beside = overlapped_scan(p), hold = holds_c(p);
  // The scan starts where the caller's stream is now (A and B made), not after the previous
  // call's work on the scratch (`done`), which it does not touch: the host waits for no more. Its
  // stream has the device's highest priority, so its blocks are scheduled before the GEMM's
  // (which would otherwise fill the GPU and leave the scan, and the host, waiting for it).
  cudaStream_t scan = s;
  if (beside) {
    if (!scratch.scan_stream) {
      int least = 0, greatest = 0;
      CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      scratch.scan_stream.emplace(cudaStreamNonBlocking, greatest);
    }
    if (!scratch.scan_from) scratch.scan_from.emplace();
    scan = scratch.scan_stream->get();
    scratch.scan_from->record(s);
    CUDA_CHECK(cudaStreamWaitEvent(scan, scratch.scan_from->get(), 0));
  }
  if (scratch.used) CUDA_CHECK(cudaStreamWaitEvent(s, scratch.done.get(), 0));
  const Needs need = needs_of(p);
  void* slot_a = grown(scratch.a, need.a, "op(A)", p);
  void* slot_b = grown(scratch.b, need.b, "op(B)", p);
  void* slot_c = grown(scratch.c, need.c, "a scratch C", p);
  void* stored = grown(scratch.stored, need.stored, "an operand as stored", p);
  auto* found = static_cast<kernels::NonfiniteFound*>(grown(scratch.found, need.found, "a NaN/Inf count"));

  // Host operands and C of held_pin_min_bytes and more page-locked for their copies (as the in-core
  // GEMM does), those of stage_min_bytes and more carried by the staging lanes instead.
  const bool host_c = !p.c_device;
  const HostCopies copies{scratch, gpu.device};
  kernels::HostRegistration pin_a, pin_b, pin_c;
  const double pin_seconds = host_seconds([&] {
    if (!p.a.device) pin_a = pin_unless_staged(p.a.data, p.a.rows, p.a.cols, p.a.ld, es);
    if (!p.b.device) pin_b = pin_unless_staged(p.b.data, p.b.rows, p.b.cols, p.b.ld, es);
    if (host_c) pin_c = pin_unless_staged(p.c, p.m, p.n, p.ldc, es);
  });
  const bool waited = p.wait || host_c || !p.a.device || !p.b.device;
  std::optional<StepEvents> t;
  if (waited) {
    t.emplace();
    t->start.record(s);
  }
  try {
    const Placed a = place(p.a, p.dtype, slot_a, stored, s, copies);
    if (p.refuse_nonfinite)
      kernels::gpu_count_nonfinite(p.dtype, p.a.rows, p.a.cols, a.stored.data, a.stored.ld, found, scan);
    const Placed b = place(p.b, p.dtype, slot_b, stored, s, copies);
    if (p.refuse_nonfinite) {
      kernels::gpu_count_nonfinite(p.dtype, p.b.rows, p.b.cols, b.stored.data, b.stored.ld, found + 1, scan);
      if (!beside) refuse_found(found, p, s);
    }
    if (waited) t->placed.record(s);
    void* into = direct_c(p) ? p.c : slot_c;
    kernels::gpu_gemm(kernel, {p.dtype, p.m, p.n, p.k, a.op, b.op, into, s}, gpu.context);
    if (hold) refuse_found(found, p, scan);  // the host waits for the scan; the GEMM runs on
    if (waited) t->computed.record(s);
    if (!direct_c(p) && p.m > 0 && p.n > 0) {
      const std::size_t row = static_cast<std::size_t>(p.n) * es, ldc_bytes = static_cast<std::size_t>(p.ldc) * es;
      if (p.c_device && p.alpha == 1 && p.beta == 0) {
        CUDA_CHECK(cudaMemcpy2DAsync(p.c, ldc_bytes, slot_c, row, row, static_cast<std::size_t>(p.m),
                                     cudaMemcpyDeviceToDevice, s));
      } else if (p.c_device) {
        kernels::gpu_scale_add(p.dtype, p.m, p.n, p.alpha, slot_c, p.beta, p.c, p.ldc, s);
      } else {
        void* result = slot_c;
        if (p.beta != 0) {  // C_old up, packed, then alpha T + beta C_old there
          // Its copy overlaps the GEMM (it waits only for the operands' placing, the last use of
          // `stored` before it): the host copies it while the kernel runs.
          copies.up(p.c, ldc_bytes, p.m, row, stored, s, t->placed.get());
          kernels::gpu_scale_add(p.dtype, p.m, p.n, p.alpha, slot_c, p.beta, stored, p.n, s);
          result = stored;
        } else if (p.alpha != 1) {
          kernels::gpu_scale_add(p.dtype, p.m, p.n, p.alpha, slot_c, 0, slot_c, p.n, s);
        }
        copies.down(result, p.m, row, p.c, ldc_bytes, s);
      }
    }
    scratch.done.record(s);
    scratch.used = true;
    if (beside && !hold) refuse_found(found, p, scan);  // C is being written: the verdict last
  } catch (...) {
    synchronize_quietly({s, scan});  // the scan too: it may still read A and B, and write `found`
    throw;
  }
  if (!waited) return {};
  t->finished.record(s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  gpu.note_peak();
  return {{"h2d", pin_seconds + t->placed.seconds_since(t->start)},
          {"kernel", t->computed.seconds_since(t->placed)},
          {"d2h", t->finished.seconds_since(t->computed)}};
}

}  // namespace tessera::backend
