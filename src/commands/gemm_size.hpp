#pragma once
// A GEMM size as `tessera bench` and `tessera tune` take it: "N" (a cube) or "MxNxK".
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tessera::commands {

struct GemmSize {
  std::int64_t m = 0, n = 0, k = 0;
  std::string label() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

// `who` names the subcommand in the message ("bench", "tune").
inline GemmSize parse_gemm_size(const std::string& text, const std::string& who) {
  const auto bad = [&] { return InputError(who + ": size '" + text + "' is not N or MxNxK with positive integers"); };
  std::vector<std::int64_t> dims;
  std::size_t pos = 0;
  while (true) {
    const std::size_t x = text.find_first_of("xX", pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 1) throw bad();
    dims.push_back(v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (dims.size() != 1 && dims.size() != 3) throw bad();
  const GemmSize size = dims.size() == 1 ? GemmSize{dims[0], dims[0], dims[0]} : GemmSize{dims[0], dims[1], dims[2]};
  // A, B and C are made in host memory: each must be indexable and fit a machine (2^36 elements,
  // 256 GiB of float32), or the message would be the C++ library's "vector larger than max_size()".
  constexpr double kMaxElements = 68719476736.0;  // 2^36
  const double m = static_cast<double>(size.m), n = static_cast<double>(size.n), k = static_cast<double>(size.k);
  if (m * k > kMaxElements || k * n > kMaxElements || m * n > kMaxElements)
    throw InputError(who + ": size '" + text + "' is too large: A, B and C (" + std::to_string(size.m) + " x " +
                     std::to_string(size.k) + ", " + std::to_string(size.k) + " x " + std::to_string(size.n) + ", " +
                     std::to_string(size.m) + " x " + std::to_string(size.n) +
                     ") must each hold at most 2^36 elements");
  return size;
}

}  // namespace tessera::commands
