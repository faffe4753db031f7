#pragma once
// Tuning as data, read where the kernel is chosen. `tessera tune` (commands/tune.hpp) times the
// full-precision GPU kernels (tessera's and cuBLAS) on the present GPU and writes the fastest
// correct one per dtype and size to a JSON tune file; `--kernel auto` on the CUDA backend reads
// it here: for a GEMM it takes the winner of the nearest tuned size of the same dtype and row
// alignment (16-byte rows or not). No source
// is rewritten; deleting the file restores the built-in choice.
//
// Tune file format (docs/kernels.md):
//   {"format": "tessera-tune-1", "device": "NVIDIA H200", "created": "...", "tessera_version": "...",
//    "choices": [{"dtype": "f32", "m": 8192, "n": 8192, "k": 8192, "kernel": "warptile-128x128",
//                 "gflops": 45000.0, "candidates": {"regtile": 30000.0, ...}}, ...]}
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace tessera::backend {

// The "format" a tune file names.
inline constexpr const char* kTuneFileFormat = "tessera-tune-1";

struct TunedChoice {
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0;
  std::string kernel;
  double gflops = 0;
  std::map<std::string, double> candidates;  // every correct candidate's GFLOP/s (may be empty: older files)
};

struct TuneTable {
  std::string path;          // where it was read from ("" when none was found)
  std::string device;        // the GPU it was tuned on
  std::string architecture;  // its compute capability, "sm_90" ("" in files written before 2026-12-07)
  bool sibling = false;      // read for another GPU of the same architecture (load_tune_table)
  std::vector<TunedChoice> choices;
  // Seconds a process pays the first time it runs a kernel of a library (cuBLAS: loading
  // libcublas and libcublasLt, the handle, the first GEMM's modules), as `tessera tune` measured
  // them ("libraries": {"cublas": {"load_seconds": s}}); empty in older files.
  std::map<std::string, double> load_seconds;
};

// "NVIDIA H200" -> "NVIDIA_H200": a GPU name made safe for a file name.
std::string sanitize_device_name(const std::string& gpu_name);

// Where the tune file of `gpu_name` is looked for, in order: $TESSERA_TUNE_FILE;
// $XDG_CACHE_HOME/tessera/tuned-<gpu>.json (else ~/.cache/tessera/...); configs/tuned/tuned-<gpu>.json
// under the current directory (a tune file committed with the sources); then the installed
// <prefix>/share/tessera/tuned/tuned-<gpu>.json (the prefix of libtessera or of the running
// binary, then the configured install prefix).
std::vector<std::string> tune_file_candidates(const std::string& gpu_name);

// Where `tessera tune` writes by default: $TESSERA_TUNE_FILE, else the cache path above.
std::string default_tune_output(const std::string& gpu_name);

// The first existing candidate, parsed; an empty table (path "") when there is none. A file
// that exists but cannot be parsed throws InputError naming it (a silently ignored tune file
// would be worse).
// Where no file of this GPU exists and `architecture` ("sm_90") is given: a sibling's, the first
// tuned-*.json (same folders, same order; by name within one) that records the same architecture,
// marked `sibling`. Kernels of one architecture rank alike on its GPUs (the H100 and the H200
// share the SM; their GEMM rates differ by clocks, not by kernel), so a sibling's choices and
// cuBLAS's load time stand in until `tessera tune` measures this GPU. The built-in choice is cuBLAS
// for every job, its load never weighed: on the H100 (no file of its own), an 8192^2 gzip job
// through it ran 0.08-0.13 s behind b7d1b05's through its own kernel, every phase alike (2026-12-07).
// A sibling file that cannot be parsed is skipped (`skipped` names it), not fatal: it was not
// written for this GPU. Only regular files are read, opened without blocking (a FIFO planted under
// a tune file's name in a shared folder is refused, never waited on).
TuneTable load_tune_table(const std::string& gpu_name, const std::string& architecture = "",
                          std::vector<std::string>* skipped = nullptr);
TuneTable read_tune_file(const std::string& path);

// Whether the rows of A (k elements) and of B and C (n elements) are whole 16-byte chunks: the
// kernels' 16-byte copy and store paths (and cuBLAS's fast ones) depend on it.
bool rows_aligned(DType dtype, std::int64_t n, std::int64_t k);

// The tuned choice of the nearest size (as tuned_kernel); nullptr when the table has none for the dtype.
const TunedChoice* tuned_choice(const TuneTable& table, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k);

// The tuned kernel for a GEMM: the choice of the same dtype and the same rows_aligned() whose
// size is nearest in log-distance (|ln m/m'| + |ln n/n'| + |ln k/k'|), or of the same dtype where
// the table has none with that alignment; "" when the table has none for the dtype.
std::string tuned_kernel(const TuneTable& table, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k);

// How much faster than cuBLAS one of tessera's kernels must run at a tuned size to be chosen
// there. A tuned size stands for its neighbours and for the pieces a run really multiplies
// (`tessera run` streams A in row blocks), where a tie can turn into a loss: at 8192^3 f32 on the
// H200 warptile-128x256-16x8 ran 0.7% faster than SGEMM in `tessera tune` and 1.9% slower in
// `tessera run`'s 1024-row pieces (2026-12-02). cuBLAS is tuned by its vendor for every shape.
inline constexpr double kOwnKernelMargin = 0.03;

// The winner among the kernels that computed correctly, from their median times in seconds: the
// fastest, except that "cublas" (when among them) stays unless the fastest beats it by more than
// kOwnKernelMargin. Times that are not finite and positive do not count; "" when none is left.
std::string tune_winner(const std::map<std::string, double>& seconds_of);

// What a process pays to load a library it has not loaded yet, where the tune file does not say:
// cuBLAS on the H200 (2026-12-03, whole `tessera run` processes of 16384^3 f32, alternated: --kernel
// auto through cuBLAS 1.49-1.69 s against warptile-128x256-16x8 1.37-1.44 s, the kernel phase equal).
inline constexpr double kDefaultLibraryLoadSeconds = 0.15;

// The kernel that finishes a whole job soonest by the tuned rates (issue 39): a job of `flops`
// floating-point operations (2mnk, all the GEMMs the process runs) takes flops / rate on a
// kernel, plus, on a kernel that needs a library (`needs_library`), that library's load
// seconds (`load_seconds`; the caller passes 0 where it is loaded already). The tuned winner
// stays unless a candidate that needs no library and that `allowed` accepts finishes sooner, its
// time counted kOwnKernelMargin longer (as in tune_winner); then the soonest such candidate. A
// choice without candidates: its winner.
std::string whole_job_kernel(const TunedChoice& tuned, double flops, double load_seconds,
                             const std::function<bool(const std::string&)>& needs_library,
                             const std::function<bool(const std::string&)>& allowed);

}  // namespace tessera::backend
