// The timing harness of `tessera bench` and `tessera tune` (bench_harness.hpp).
#include "commands/bench_harness.hpp"

#include <chrono>
#include <cstdio>

#include "core/error.hpp"
#include "core/words.hpp"

#ifdef TESSERA_HAVE_CUDA
#include "commands/bench_harness_cuda.hpp"
#endif

namespace tessera::commands::bench {
namespace {

// splitmix64's finaliser: a bijection that scatters neighbouring counters.
std::uint64_t scatter(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform [-1, 1) from a counter-based hash: fast for hundreds of MB, reproducible.
std::vector<double> uniform(std::size_t count, std::uint64_t key) {
  std::vector<double> x(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t z = scatter(key + 0x9e3779b97f4a7c15ULL * (i + 1));
    x[i] = static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
  }
  return x;
}

}  // namespace

DType parse_dtype(const std::string& text, const std::string& who) {
  DType dtype = DType::f64;
  if (!tessera::parse_dtype(text, &dtype)) throw InputError(who + ": dtype " + not_one_of(text, dtype_words()));
  return dtype;
}

std::vector<DType> parse_dtypes(const std::vector<std::string>& texts, const std::string& who) {
  std::vector<DType> dtypes;
  for (const std::string& text : texts.empty() ? std::vector<std::string>{"f32", "f64"} : texts)
    dtypes.push_back(parse_dtype(text, who));
  return dtypes;
}

std::vector<Size> parse_sizes(const std::vector<std::string>& texts, const std::vector<std::string>& defaults,
                              const std::string& who) {
  std::vector<Size> sizes;
  for (const std::string& text : texts.empty() ? defaults : texts) sizes.push_back(parse_gemm_size(text, who));
  return sizes;
}

Timing checked_timing(int warmup, int repeats, const std::string& who) {
  if (repeats < 1) throw InputError(who + ": --repeats must be at least 1");
  if (warmup < 0) throw InputError(who + ": --warmup must not be negative");
  return Timing{warmup, repeats};
}

Inputs::Inputs(const Size& s, std::uint64_t seed) {
  const std::uint64_t key =
      scatter(scatter(scatter(scatter(seed) + static_cast<std::uint64_t>(s.m)) + static_cast<std::uint64_t>(s.n)) +
              static_cast<std::uint64_t>(s.k));
  a = uniform(static_cast<std::size_t>(s.m * s.k), key);
  b = uniform(static_cast<std::size_t>(s.k * s.n), scatter(key + 1));
}

void announce(const std::string& who, const Size& s, DType t, const std::string& kernel) {
  std::fprintf(stderr, "%s: %s %s %s ...", who.c_str(), s.label().c_str(), short_name(t), kernel.c_str());
  std::fflush(stderr);
}

std::vector<double> time_on_host(const Timing& timing, const std::function<void()>& launch) {
  for (int i = 0; i < timing.warmup; ++i) launch();
  std::vector<double> seconds;
  for (int i = 0; i < timing.repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    launch();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (i == 0 && seconds[0] > timing.give_up_after_s) break;
  }
  return seconds;
}

#ifdef TESSERA_HAVE_CUDA

std::vector<double> time_on_stream(const Timing& timing, const std::function<void()>& launch,
                                   const kernels::Stream& stream, const std::function<void()>& before_timed) {
  for (int i = 0; i < timing.warmup; ++i) launch();
  stream.synchronize();  // so that what before_timed starts covers the timed launches only
  if (before_timed) before_timed();
  std::vector<kernels::Event> start(static_cast<std::size_t>(timing.repeats));
  std::vector<kernels::Event> stop(static_cast<std::size_t>(timing.repeats));
  std::size_t launched = 0;
  for (; launched < start.size(); ++launched) {
    start[launched].record(stream.get());
    launch();
    stop[launched].record(stream.get());
    // Only a limit waits for the first launch; otherwise the launches queue back to back.
    if (launched == 0 && std::isfinite(timing.give_up_after_s) &&
        stop[0].seconds_since(start[0]) > timing.give_up_after_s) {
      launched = 1;
      break;
    }
  }
  stream.synchronize();
  std::vector<double> seconds;
  for (std::size_t i = 0; i < launched; ++i) seconds.push_back(stop[i].seconds_since(start[i]));
  return seconds;
}

#endif  // TESSERA_HAVE_CUDA

}  // namespace tessera::commands::bench
