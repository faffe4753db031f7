#include "io/stored_type.hpp"

#include <algorithm>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "io/direct_io.hpp"
#include "io/hdf5_library.hpp"

namespace tessera::io {

namespace {

std::uint32_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float float_of(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// x rounded to float by truncation, with the last bit set where that lost anything ("round to
// odd"): rounding this to a format of at most 22 significant bits gives x correctly rounded.
float to_odd_float(double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(x) || !std::isfinite(f) || static_cast<double>(f) == x) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return float_of(bits_of(f) | 1u);
}

bool is_inf16(std::uint16_t h, Stored s) {
  return s == Stored::f16 ? (h & 0x7fffu) == 0x7c00u : (h & 0x7fffu) == 0x7f80u;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// float32 -> float16 eight at a time with the F16C instruction (round to nearest, ties to even:
// the same bits as to_f16), where the processor has it: ~0.3 ns an element against ~2 ns.
__attribute__((target("avx,f16c"))) void f16c_row(const float* in, std::int64_t n, std::uint16_t* out) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = to_f16(in[i]);
}
// F16C is CPUID leaf 1's ECX bit 29 (clang's __builtin_cpu_supports does not name it); the AVX
// registers it uses must be enabled by the OS, which __builtin_cpu_supports("avx") checks.
bool have_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  }();
  return has;
}
// float16 -> float32 eight at a time (exact, as from_f16).
__attribute__((target("avx,f16c"))) void f16c_widen(const std::uint16_t* in, std::size_t n, float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = from_f16(in[i]);
}
#else
void f16c_row(const float*, std::int64_t, std::uint16_t*) {}
void f16c_widen(const std::uint16_t*, std::size_t, float*) {}
bool have_f16c() { return false; }
#endif

template <class From, class To, class Convert>
void convert_rows(const From* src, std::int64_t rows, std::int64_t cols, To* dst, const Convert& convert,
                  NonfiniteCount* overflow, std::int64_t row0, std::int64_t col0, std::int64_t ld_total) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const From* in = src + r * cols;
    To* out = dst + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      bool overflowed = false;
      out[c] = convert(in[c], &overflowed);
      if (overflowed && overflow) {
        overflow->count += 1;
        const double at = static_cast<double>((row0 + r) * ld_total + col0 + c);
        if (at < overflow->first) overflow->first = at;
      }
    }
  }
}

}  // namespace

std::uint16_t to_f16(float v) {
  const std::uint32_t x = bits_of(v);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // 65520 and above: Inf
  if (a < 0x38800000u) {
    // Below float16's smallest normal (2^-14): adding 0.5 puts the subnormal's bits at the
    // bottom of the float's mantissa, the hardware rounding them to nearest, ties to even.
    const float shifted = float_of(a) + 0.5f;
    return static_cast<std::uint16_t>(sign | (bits_of(shifted) - 0x3f000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest, ties to even.
  a += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (a >> 13));
}

std::uint16_t to_bf16(float v) {
  std::uint32_t x = bits_of(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

std::uint16_t to_f16(double v) { return to_f16(to_odd_float(v)); }
std::uint16_t to_bf16(double v) { return to_bf16(to_odd_float(v)); }

float from_f16(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return float_of(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // zero or subnormal: m 2^-24
    const float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  return float_of(sign | ((e + 127 - 15) << 23) | (m << 13));
}

float from_bf16(std::uint16_t h) { return float_of(static_cast<std::uint32_t>(h) << 16); }

Stored half_file_type(hid_t type) {
  if (type < 0 || H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 2 ||
      H5Tget_order(H5T_NATIVE_FLOAT) != H5T_ORDER_LE)
    return Stored::same;
  for (const Stored s : {Stored::f16, Stored::bf16}) {
    const hid_t want = stored_file_type(s, DType::f32);
    const bool equal = want >= 0 && H5Tequal(type, want) > 0;
    if (want >= 0) H5Tclose(want);
    if (equal) return s;
  }
  return Stored::same;
}

void widen_half(const std::uint16_t* in, std::size_t count, Stored s, DType to, void* out) {
  if (to == DType::f32) {
    auto* f = static_cast<float*>(out);
    if (s == Stored::f16 && have_f16c()) {
      f16c_widen(in, count, f);
    } else if (s == Stored::f16) {
      for (std::size_t i = 0; i < count; ++i) f[i] = from_f16(in[i]);
    } else {  // (the shift itself, which the compiler vectorises)
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t b = static_cast<std::uint32_t>(in[i]) << 16;
        std::memcpy(f + i, &b, sizeof b);
      }
    }
    return;
  }
  if (to != DType::f64) throw std::invalid_argument("widen_half: a half type widens to float32 or float64");
  auto* d = static_cast<double*>(out);
  for (std::size_t i = 0; i < count; ++i) d[i] = s == Stored::f16 ? from_f16(in[i]) : from_bf16(in[i]);
}

const char* stored_word(Stored s) {
  switch (s) {
    case Stored::same:
      return "same";
    case Stored::f16:
      return "f16";
    case Stored::bf16:
      return "bf16";
    case Stored::f32:
      return "f32";
    case Stored::f64:
      return "f64";
  }
  return "?";
}

bool parse_stored(const std::string& word, Stored* out) {
  for (const Stored s : {Stored::same, Stored::f16, Stored::bf16, Stored::f32, Stored::f64})
    if (word == stored_word(s)) {
      *out = s;
      return true;
    }
  return false;
}

std::string stored_name(Stored s, DType computed) {
  switch (s) {
    case Stored::f16:
      return "float16";
    case Stored::bf16:
      return "bfloat16";
    case Stored::f32:
      return "float32";
    case Stored::f64:
      return "float64";
    case Stored::same:
      break;
  }
  return dtype_name(computed);
}

std::size_t stored_size(Stored s, DType computed) {
  switch (s) {
    case Stored::f16:
    case Stored::bf16:
      return 2;
    case Stored::f32:
      return 4;
    case Stored::f64:
      return 8;
    case Stored::same:
      break;
  }
  return dtype_size(computed);
}

bool converts(Stored s, DType computed) {
  return s != Stored::same && stored_size(s, computed) != dtype_size(computed);
}

Stored takes_rounded(Stored s, DType computed) {
  return (s == Stored::f16 || s == Stored::bf16) && computed == DType::f32 ? s : Stored::same;
}

hid_t stored_file_type(Stored s, DType computed) {
  if (is_complex(computed)) return hdf5::complex_file_type(computed);  // stored as computed (converts() refuses)
  if (s == Stored::same) s = computed == DType::f32 ? Stored::f32 : Stored::f64;
  if (s == Stored::f32) return H5Tcopy(H5T_IEEE_F32LE);
  if (s == Stored::f64) return H5Tcopy(H5T_IEEE_F64LE);
  // A 16-bit float from float32's description: sign at 15, then exponent and mantissa.
  const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  if (t < 0) return t;
  const bool half = s == Stored::f16;
  const std::size_t exponent = half ? 5 : 8, mantissa = half ? 10 : 7;
  if (H5Tset_fields(t, 15, mantissa, exponent, 0, mantissa) < 0 || H5Tset_precision(t, 16) < 0 ||
      H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, half ? 15 : 127) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

namespace {
void convert_rows_of(const void* src, DType from, std::int64_t rows, std::int64_t cols, Stored to, void* dst,
                     NonfiniteCount* overflow, std::int64_t row0, std::int64_t col0, std::int64_t ld_total);
}  // namespace

void convert_block(const void* src, DType from, std::int64_t rows, std::int64_t cols, Stored to, void* dst,
                   NonfiniteCount* overflow, std::int64_t row0, std::int64_t col0, std::int64_t ld_total) {
  // Rows split over the I/O threads, 4 Mi elements at least each (a 32768^2 C converts in about a
  // second on one core).
  const std::int64_t elements = rows * cols;
  const int threads = static_cast<int>(
      std::min<std::int64_t>({static_cast<std::int64_t>(io_threads()), std::max<std::int64_t>(1, elements >> 22),
                              std::max<std::int64_t>(rows, 1)}));
  if (threads <= 1) return convert_rows_of(src, from, rows, cols, to, dst, overflow, row0, col0, ld_total);
  const std::size_t in_row = static_cast<std::size_t>(cols) * dtype_size(from),
                    out_row = static_cast<std::size_t>(cols) * stored_size(to, from);
  std::vector<NonfiniteCount> counts(static_cast<std::size_t>(threads));
  const auto part = [&](int t) {
    const std::int64_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
    convert_rows_of(static_cast<const unsigned char*>(src) + static_cast<std::size_t>(r0) * in_row, from, r1 - r0, cols,
                    to, static_cast<unsigned char*>(dst) + static_cast<std::size_t>(r0) * out_row,
                    &counts[static_cast<std::size_t>(t)], row0 + r0, col0, ld_total);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
  part(0);
  for (auto& th : pool) th.join();
  if (overflow)
    for (const NonfiniteCount& c : counts) overflow->merge(c);
}

namespace {
void convert_rows_of(const void* src, DType from, std::int64_t rows, std::int64_t cols, Stored to, void* dst,
                     NonfiniteCount* overflow, std::int64_t row0, std::int64_t col0, std::int64_t ld_total) {
  if (!converts(to, from)) {
    std::memcpy(dst, src, static_cast<std::size_t>(rows * cols) * dtype_size(from));
    return;
  }
  const auto half = [to](auto v, bool* overflowed) {
    const std::uint16_t h = to == Stored::f16 ? to_f16(v) : to_bf16(v);
    *overflowed = std::isfinite(v) && is_inf16(h, to);
    return h;
  };
  auto* out16 = static_cast<std::uint16_t*>(dst);
  if (from == DType::f32 && to == Stored::f16 && have_f16c()) {
    // Converted by the instruction, then the Infs looked for: those whose input was finite
    // overflowed (a rare case: only then is the input read again).
    const auto* in = static_cast<const float*>(src);
    for (std::int64_t r = 0; r < rows; ++r) {
      f16c_row(in + r * cols, cols, out16 + r * cols);
      for (std::int64_t c = 0; c < cols; ++c)
        if ((out16[r * cols + c] & 0x7fffu) == 0x7c00u && std::isfinite(in[r * cols + c]) && overflow) {
          overflow->count += 1;
          const double at = static_cast<double>((row0 + r) * ld_total + col0 + c);
          if (at < overflow->first) overflow->first = at;
        }
    }
    return;
  }
  if (from == DType::f32 && to == Stored::bf16) {
    // Branch-free rounding (the compiler vectorises it), then the Infs looked for as above.
    const auto* in = static_cast<const float*>(src);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * cols;
      std::uint16_t* o = out16 + r * cols;
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::uint32_t x = bits_of(row[c]);
        const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
        o[c] = static_cast<std::uint16_t>(nan ? (x >> 16) | 0x40u : (x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
      }
      for (std::int64_t c = 0; c < cols; ++c)
        if ((o[c] & 0x7fffu) == 0x7f80u && std::isfinite(row[c]) && overflow) {
          overflow->count += 1;
          const double at = static_cast<double>((row0 + r) * ld_total + col0 + c);
          if (at < overflow->first) overflow->first = at;
        }
    }
    return;
  }
  if (from == DType::f32) {
    if (to == Stored::f64)
      convert_rows(
          static_cast<const float*>(src), rows, cols, static_cast<double*>(dst),
          [](float v, bool*) { return static_cast<double>(v); }, overflow, row0, col0, ld_total);
    else
      convert_rows(static_cast<const float*>(src), rows, cols, out16, half, overflow, row0, col0, ld_total);
    return;
  }
  if (from != DType::f64) throw std::invalid_argument("convert_block: C is computed in float32 or float64");
  if (to == Stored::f32)
    convert_rows(
        static_cast<const double*>(src), rows, cols, static_cast<float*>(dst),
        [](double v, bool* overflowed) {
          const auto f = static_cast<float>(v);
          *overflowed = std::isfinite(v) && !std::isfinite(f);
          return f;
        },
        overflow, row0, col0, ld_total);
  else
    convert_rows(static_cast<const double*>(src), rows, cols, out16, half, overflow, row0, col0, ld_total);
}

}  // namespace

}  // namespace tessera::io
