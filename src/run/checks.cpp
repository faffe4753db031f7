#include "run/checks.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <cstdint>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace tessera::run {

namespace {

// Whether n floats (or doubles, as their bit patterns) are all finite: an exponent of all ones
// is Inf or NaN. Branch-free, so the compiler vectorizes it; large arrays are split over threads.
template <class Bits>
bool all_finite(const Bits* bits, std::size_t n) {
  constexpr Bits kExponent =
      sizeof(Bits) == 4 ? static_cast<Bits>(0x7f800000u) : static_cast<Bits>(0x7ff0000000000000ull);
  const auto part = [&](std::size_t begin, std::size_t end) {
    unsigned bad = 0;
    for (std::size_t i = begin; i < end; ++i) bad |= static_cast<unsigned>((bits[i] & kExponent) == kExponent);
    return bad == 0;
  };
  const std::size_t bytes = n * sizeof(Bits);
  const auto threads = static_cast<std::size_t>(
      std::clamp<std::size_t>(bytes >> 26, 1, std::max(1u, std::thread::hardware_concurrency())));
  if (threads == 1) return part(0, n);
  std::vector<char> ok(threads, 1);
  std::vector<std::thread> pool;
  const auto run = [&](std::size_t t) { ok[t] = part(n * t / threads, n * (t + 1) / threads); };
  try {
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(run, t);
  } catch (const std::system_error&) {  // no more threads: this one does the parts not started
    for (std::size_t t = pool.size() + 1; t < threads; ++t) run(t);
  }
  run(0);
  for (auto& th : pool) th.join();
  return std::all_of(ok.begin(), ok.end(), [](char x) { return x != 0; });
}

}  // namespace

NonfiniteScan scan_nonfinite(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row0,
                             std::int64_t col0, std::int64_t ld_total) {
  NonfiniteScan s;
  // The common case, all finite, at memory speed; only data that holds some is counted below.
  const auto n = static_cast<std::size_t>(rows * cols);
  if (n == 0 || (dtype == DType::f32 ? all_finite(static_cast<const std::uint32_t*>(data), n)
                                     : all_finite(static_cast<const std::uint64_t*>(data), n)))
    return s;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto at = static_cast<std::size_t>(i * cols + j);
      const double v = dtype == DType::f32 ? static_cast<const float*>(data)[at] : static_cast<const double*>(data)[at];
      if (!std::isfinite(v)) {
        if (s.count == 0) s.first = static_cast<double>((row0 + i) * ld_total + col0 + j);
        s.count += 1;
      }
    }
  return s;
}

void refuse_nonfinite(const comm::Comm& comm, const std::string& a_name, const NonfiniteScan& a,
                      std::int64_t a_cols, const std::string& b_name, const NonfiniteScan& b, std::int64_t b_cols,
                      bool allowed) {
  const double na = comm.sum(a.count), nb = comm.sum(b.count);
  const double fa = comm.min(a.first), fb = comm.min(b.first);
  comm.step([&] {
    if (comm.rank() != 0 || allowed) return;
    const auto refuse = [](const std::string& what, const std::string& name, double count, double first,
                           std::int64_t cols) {
      const auto idx = static_cast<std::int64_t>(first);
      return InputError(what + " '" + name + "' holds " + std::to_string(static_cast<long long>(count)) +
                        " non-finite value(s) (NaN/Inf), the first at (" + std::to_string(idx / cols) + ", " +
                        std::to_string(idx % cols) + "); pass --allow-nonfinite to multiply anyway");
    };
    if (na > 0) throw refuse("A", a_name, na, fa, a_cols);
    if (nb > 0) throw refuse("B", b_name, nb, fb, b_cols);
  });
}

std::string shared_gpu_note(const comm::Comm& comm, const std::string& gpu) {
  const auto all = comm.gather(gpu, 0);
  std::string note;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto first_use = std::find(all.begin(), all.end(), all[i]) - all.begin();
    if (all[i].empty() || static_cast<std::size_t>(first_use) != i) continue;  // no GPU, or reported already
    std::string ranks;
    int users = 0;
    for (std::size_t j = i; j < all.size(); ++j)
      if (all[j] == all[i]) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(j);
        ++users;
      }
    if (users > 1)
      note += (note.empty() ? "" : "; ") + std::string("ranks ") + ranks + " share " + all[i].substr(all[i].find('|') + 1);
  }
  return comm.broadcast(note, 0);
}

std::int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::unique_ptr<backend::Backend> make_rank_backend(const std::string& backend_name, const backend::Placement& where,
                                                    const std::string& kernel_name, DType dtype, std::int64_t m,
                                                    std::int64_t n, std::int64_t k, report::RankRecord& me,
                                                    std::string& kernel) {
  auto be = backend::make_backend(backend_name, where);
  kernel = kernel_name == "auto" ? be->resolve_kernel(dtype, m, n, k) : kernel_name;
  const auto names = be->kernels();
  if (std::find(names.begin(), names.end(), kernel) == names.end()) {
    std::string list;
    for (const auto& nm : names) list += (list.empty() ? "" : ", ") + nm;
    throw InputError("unknown kernel '" + kernel + "' for the " + be->name() + " backend (choose: auto, " + list + ")");
  }
  me.device = be->device();
  me.device_id = be->device_id();
  me.warnings = be->warnings();
  return be;
}

void refuse_over_node_memory(const comm::Comm& comm, double need, const std::string& what,
                             const std::string& advice) {
  const comm::Comm node_comm = comm.split_node();
  const double node_need = node_comm.sum(need);
  const std::string host = comm.node().host;
  comm.step([&] {
    const double total = node_memory_bytes();
    if (total > 0 && node_need > total)
      throw InputError(fmt::format(
          "the {} rank(s) on {} need {:.1f} GiB of host memory for their blocks (this rank {:.1f} GiB: {}) but the "
          "node has {:.1f} GiB; {}",
          node_comm.size(), host, node_need / kGiB, need / kGiB, what, total / kGiB, advice));
  });
}

double node_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024.0;
  return 0;
}

}  // namespace tessera::run
