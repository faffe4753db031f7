#pragma once
// One product of matrices already in this process's memory (libtessera's buffers, issue 42 item
// 3): C = alpha op(A) op(B) + beta C on one rank, nothing read from or written to a file. The
// rank's backend is kept from call to call, as a launch of many products keeps it
// (job/launch.hpp): a program calling it in a loop starts its GPU context and libraries once.
// The report is a run's (report::JobReport): one rank, its phases, backend and kernel.
#include <cstdint>
#include <mutex>

#include "core/dtype.hpp"
#include "job/job_options.hpp"
#include "report/report.hpp"

namespace tessera::job {

// A row-major matrix in host memory, or in the memory of the GPU the process computes on
// (`device`): `rows` x `cols` elements of `dtype`, rows `ld` elements apart (ld >= cols).
// Described, never owned or copied by the description.
struct MemoryMatrix {
  DType dtype = DType::f64;
  std::int64_t rows = 0, cols = 0, ld = 0;
  const void* data = nullptr;  // A, B
  void* out = nullptr;         // C: written (and read first when beta != 0)
  bool device = false;
};

// How a call is ordered with the caller's GPU work: `stream` (a cudaStream_t; nullptr: the
// backend's own) and whether the call waits for its work (`wait` false: with every matrix on the
// GPU, it returns once the product is enqueued on `stream`, and the report has no device times).
struct MemoryCall {
  void* stream = nullptr;
  bool wait = true;
};

// C (`c`) = alpha op(A) op(B) + beta C, with op, alpha, beta and every choice (backend, kernel,
// dtype, gpu memory, NaN/Inf refusal) from `o` (its datasets are left empty). op(A) is M x K, op(B)
// K x N, C M x N, all of one dtype (that of --dtype, where it is asked); C shares no memory with
// A or B. Inputs holding NaN or Inf are refused as a file's are, unless o.allow_nonfinite. beta =
// 0 does not read C (it may hold anything). On a GPU the matrices are used where they lie (device
// memory in place, host memory copied up), on the CPU they must be in host memory. Throws
// InputError naming the cause; C is untouched when the product is refused, and may be partly
// written when the backend fails midway. One call at a time per process (serialized inside).
report::JobReport multiply_in_memory(const JobOptions& o, const MemoryMatrix& a, const MemoryMatrix& b,
                                     const MemoryMatrix& c, const MemoryCall& call = {});

// The kept backend goes (its GPU memory and context released): a program that is done
// multiplying, or a test. The next call starts one again.
void release_memory_backend();

}  // namespace tessera::job
