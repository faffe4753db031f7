#pragma once
// The timing harness `tessera bench` and `tessera tune` share (internal to commands/): their
// sizes and dtypes as options give them, the random inputs, the accuracy measure, and the
// timing itself: warm-up launches, then timed ones (their median is what counts), steady_clock
// around each call on the CPU; on the GPU (bench_harness_cuda.hpp) CUDA events around each launch
// on a stream, and the copies to and from the device.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "commands/gemm_size.hpp"
#include "core/dtype.hpp"

namespace tessera::commands::bench {

using Size = GemmSize;

inline const char* short_name(DType t) { return t == DType::f32 ? "f32" : "f64"; }

// "f32"/"float32", "f64"/"float64"; `who` names the subcommand in the message.
DType parse_dtype(const std::string& text, const std::string& who);
// Each text parsed; empty: f32 and f64.
std::vector<DType> parse_dtypes(const std::vector<std::string>& texts, const std::string& who);
// Each text parsed (commands/gemm_size.hpp); empty: the defaults.
std::vector<Size> parse_sizes(const std::vector<std::string>& texts, const std::vector<std::string>& defaults,
                              const std::string& who);

// How a kernel is timed: `warmup` untimed launches, then `repeats` timed ones, fewer when the
// first timed launch already took longer than `give_up_after_s` (tune: far behind the best).
struct Timing {
  int warmup = 1;
  int repeats = 1;
  double give_up_after_s = std::numeric_limits<double>::infinity();
};
// Throws InputError when repeats < 1 or warmup < 0 ("--repeats", "--warmup").
Timing checked_timing(int warmup, int repeats, const std::string& who);

// A and B of one size, uniform [-1, 1) in float64 from a counter-based generator seeded by the
// seed and the size (never zeros; the same for every dtype, which rounds them: rounded<T>).
struct Inputs {
  std::vector<double> a, b;
  Inputs(const Size& s, std::uint64_t seed);
};

// Elementwise conversion: the inputs rounded to T, and those values back in float64 (exact).
template <class T, class S>
std::vector<T> rounded(const std::vector<S>& x) {
  return std::vector<T>(x.begin(), x.end());
}

// ||C - Cref||_F / ||Cref||_F, accumulated in float64. NaN when C holds a NaN.
template <class T, class R>
double rel_frobenius_error(const std::vector<T>& c, const std::vector<R>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double r = static_cast<double>(ref[i]);
    const double d = static_cast<double>(c[i]) - r;
    diff += d * d;
    norm += r * r;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// "WHO: MxNxK f32 KERNEL ..." on stderr, before a kernel is timed; its time follows on the line.
void announce(const std::string& who, const Size& s, DType t, const std::string& kernel);

// The seconds of each timed call of `launch`, steady_clock around each.
std::vector<double> time_on_host(const Timing& timing, const std::function<void()>& launch);

}  // namespace tessera::commands::bench
