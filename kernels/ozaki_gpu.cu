// "f64-ozaki": float64 C = A * B through the Ozaki scheme II on the INT8 tensor cores (issue 45;
// the method, the plan and the bound: kernels/ozaki.hpp and docs/kernels.md "Ozaki").
//
//   1. Pre-pass (row_stats, col_stats): per row of A and column of B the largest magnitude and the
//      sum of magnitudes (A's rows in segments where they are few), then the sums of squares, read
//      back to the host (24 bytes a row or column; B's columns once per b_key), which picks the
//      moduli (ozaki::moduli_for_spread: from K and the worst max/mean ratio) or falls back to
//      cuBLAS DGEMM: where A or B holds a NaN or an Inf (DGEMM then propagates them as it always
//      does), where the spread needs more bits than 20 moduli hold, where K > 131071 (the int32
//      products would wrap) or where the buffers do not fit beside the job's.
//   2. Residues (residues_rows for A, residues_cols for B through a shared-memory transpose):
//      each element times its row's (column's) power of two, rounded to an integer (half away from
//      zero, as the host reference), reduced modulo each p_l to an int8 in the symmetric range;
//      rows K-contiguous, padded with zeros to a multiple of 32 (what cuBLAS's IMMA kernels want):
//      n_mod x m x kp for A, n_mod x np x kp for B (N padded to 16 with zero columns).
//   3. Products: one cuBLASLt int8 GEMM per modulus (CUDA_R_8I -> CUDA_R_32I, CUBLAS_COMPUTE_32I,
//      the "TN" layout both operands K-contiguous), over row bands of C sized to the memory left;
//      the algorithm chosen by timing the heuristic's first few on the first moduli's products
//      (kernels/int8_gemm.hpp: its first choice runs 16384^3 at 57% of the rate of its second).
//   4. Rebuild (rebuild_band): per element, the n_mod int32 products -> u_l -> the wrapping
//      128-bit sum S and the quotient q (ozaki.hpp step 4) -> C' = S - qP exactly -> float64
//      (rounded once) times 2^(-s_i - t_j); C = that, or C += it.
// Kernels know nothing of MPI or HDF5.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/env.hpp"
#include "kernels/cublas_library.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gpu_kernel.hpp"
#include "kernels/int8_gemm.hpp"
#include "kernels/ozaki.hpp"

namespace tessera::kernels {
namespace {

__extension__ typedef unsigned __int128 u128;
using ull = unsigned long long;

constexpr int kPad = 32;                        // kp: K rounded up to this
constexpr ull kNonFinite = 0x7ff0000000000000;  // |x|'s bits at or above this: Inf or NaN

// The moduli as compile-time constants (ozaki::moduli(), checked at the first launch), so that the
// unrolled loops below reduce by constants: multiplications, not divisions.
constexpr int kModuli[ozaki::kMaxModuli] = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                                            223, 217, 211, 199, 197, 193, 191, 181, 179, 173};

// x's residue modulo the l-th modulus in the symmetric range, as an int8 (l a compile-time
// constant after unrolling: the switch folds away), for |x| < 2^62. Unsigned reductions by a
// constant are the cheapest (a multiply-high, a shift, a multiply-add): x plus a multiple of P of
// at least 2^62 is a non-negative 64-bit value of the same residue, its two 32-bit halves reduced
// apart and combined.
template <int P>
__device__ __forceinline__ signed char symmetric(long long x) {
  if constexpr (P == 256) {
    return static_cast<signed char>(static_cast<unsigned char>(static_cast<unsigned long long>(x) & 0xff));
  } else {
    constexpr ull kBias = ((ull{1} << 62) + P - 1) / P * P;  // below 2^62 + P
    constexpr unsigned kTwo32 = static_cast<unsigned>((ull{1} << 32) % P);
    constexpr unsigned kP = P;
    const ull ux = static_cast<ull>(x) + kBias;  // x + kBias in (0, 2^63 + P)
    const unsigned r = ((static_cast<unsigned>(ux >> 32) % kP) * kTwo32 + static_cast<unsigned>(ux) % kP) % kP;
    return static_cast<signed char>(r > kP / 2 ? static_cast<int>(r) - P : static_cast<int>(r));
  }
}

// f(std::integral_constant<int, p_l>{}) for the l-th modulus: after unrolling, l is a constant
// and the switch folds away, leaving f with a constant divisor.
template <class F>
__device__ __forceinline__ auto with_modulus(int l, F&& f) {
  switch (l) {
    case 0:
      return f(std::integral_constant<int, kModuli[0]>{});
    case 1:
      return f(std::integral_constant<int, kModuli[1]>{});
    case 2:
      return f(std::integral_constant<int, kModuli[2]>{});
    case 3:
      return f(std::integral_constant<int, kModuli[3]>{});
    case 4:
      return f(std::integral_constant<int, kModuli[4]>{});
    case 5:
      return f(std::integral_constant<int, kModuli[5]>{});
    case 6:
      return f(std::integral_constant<int, kModuli[6]>{});
    case 7:
      return f(std::integral_constant<int, kModuli[7]>{});
    case 8:
      return f(std::integral_constant<int, kModuli[8]>{});
    case 9:
      return f(std::integral_constant<int, kModuli[9]>{});
    case 10:
      return f(std::integral_constant<int, kModuli[10]>{});
    case 11:
      return f(std::integral_constant<int, kModuli[11]>{});
    case 12:
      return f(std::integral_constant<int, kModuli[12]>{});
    case 13:
      return f(std::integral_constant<int, kModuli[13]>{});
    case 14:
      return f(std::integral_constant<int, kModuli[14]>{});
    case 15:
      return f(std::integral_constant<int, kModuli[15]>{});
    case 16:
      return f(std::integral_constant<int, kModuli[16]>{});
    case 17:
      return f(std::integral_constant<int, kModuli[17]>{});
    case 18:
      return f(std::integral_constant<int, kModuli[18]>{});
    default:
      return f(std::integral_constant<int, kModuli[19]>{});
  }
}

__device__ __forceinline__ signed char residue(int l, long long x) {
  return with_modulus(l, [x](auto p) { return symmetric<decltype(p)::value>(x); });
}

// The exponent e of a row's largest magnitude, from its bits (0 for a zero row): each element times
// 2^-e is below 2 in magnitude, so its square cannot overflow.
__device__ __forceinline__ int exponent_of(ull amax_bits) {
  return amax_bits == 0 ? 0 : ilogb(__longlong_as_double(static_cast<long long>(amax_bits)));
}

// ---- 1. the pre-pass ----------------------------------------------------------------------------

// Rows of a row-major rows x cols X, each cut into `segs` segments of seg_len elements (a multiple
// of 32), a warp per (row, segment), so that a tile of a few hundred rows still gives every SM
// warps enough to keep its loads in flight (one warp per row of 1024 rows read at a tenth of the
// memory's rate): per (row, segment) the bits of max |x| (non-negative doubles order as their bit
// patterns; a NaN's are above an Inf's) and the sum of |x|, at [r * segs + s]. With segs = 1 these
// are the row's; else row_finish adds them up in a fixed order (the same sums from run to run).
__global__ void row_stats(std::int64_t rows, std::int64_t cols, int segs, std::int64_t seg_len,
                          const double* __restrict__ x, ull* __restrict__ amax, double* __restrict__ l1) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t w = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; w < rows * segs;
       w += warps) {
    const std::int64_t r = w / segs, h0 = (w % segs) * seg_len, h1 = min(cols, h0 + seg_len);
    const double* row = x + r * cols;
    ull mx = 0;
    double sum = 0;
#pragma unroll 4
    for (std::int64_t h = h0 + lane; h < h1; h += 32) {
      const double v = fabs(row[h]);
      mx = max(mx, static_cast<ull>(__double_as_longlong(v)));
      sum += v;
    }
    for (int off = 16; off > 0; off /= 2) {
      mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      sum += __shfl_xor_sync(0xffffffffu, sum, off);
    }
    if (lane == 0) amax[w] = mx, l1[w] = sum;
  }
}

// Columns of a row-major rows x cols X: thread per column over a band of rows, then atomics into
// amax and l1 (zeroed first).
constexpr int kColStatRows = 128;
__global__ void col_stats(std::int64_t rows, std::int64_t cols, const double* __restrict__ x, ull* __restrict__ amax,
                          double* __restrict__ l1) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  for (std::int64_t h0 = blockIdx.y * static_cast<std::int64_t>(kColStatRows); h0 < rows;
       h0 += static_cast<std::int64_t>(gridDim.y) * kColStatRows) {
    ull mx = 0;
    double sum = 0;
    const std::int64_t h1 = min(rows, h0 + kColStatRows);
    for (std::int64_t h = h0; h < h1; ++h) {
      const double v = fabs(x[h * cols + j]);
      mx = max(mx, static_cast<ull>(__double_as_longlong(v)));
      sum += v;
    }
    atomicMax(&amax[j], mx);
    atomicAdd(&l1[j], sum);
  }
}

// Second pass: the sums of squares of each row (column), every element scaled by its row's
// (column's) 2^-e first (ozaki::scale_for_norm takes them so). Rows in row_stats's segments: the
// row's largest magnitude from its segments' (amax[r * segs + s]), the sums at [r * segs + s].
__global__ void row_ssq(std::int64_t rows, std::int64_t cols, int segs, std::int64_t seg_len,
                        const double* __restrict__ x, const ull* __restrict__ amax, double* __restrict__ ssq) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t w = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; w < rows * segs;
       w += warps) {
    const std::int64_t r = w / segs, h0 = (w % segs) * seg_len, h1 = min(cols, h0 + seg_len);
    const double* row = x + r * cols;
    ull mx = 0;
    for (int s = 0; s < segs; ++s) mx = max(mx, amax[r * segs + s]);
    const int e = -exponent_of(mx);
    double sum = 0;
#pragma unroll 4
    for (std::int64_t h = h0 + lane; h < h1; h += 32) {
      const double v = scalbn(row[h], e);
      sum = fma(v, v, sum);
    }
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) ssq[w] = sum;
  }
}
// The rows' statistics from their segments' (segs > 1), added in segment order.
__global__ void row_finish(std::int64_t rows, int segs, const ull* __restrict__ amax_part,
                           const double* __restrict__ l1_part, const double* __restrict__ ssq_part,
                           ull* __restrict__ amax, double* __restrict__ l1, double* __restrict__ ssq) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    ull mx = 0;
    double s1 = 0, s2 = 0;
    for (int s = 0; s < segs; ++s) {
      mx = max(mx, amax_part[r * segs + s]);
      s1 += l1_part[r * segs + s];
      s2 += ssq_part[r * segs + s];
    }
    amax[r] = mx, l1[r] = s1, ssq[r] = s2;
  }
}
__global__ void col_ssq(std::int64_t rows, std::int64_t cols, const double* __restrict__ x,
                        const ull* __restrict__ amax, double* __restrict__ ssq) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  const int e = -exponent_of(amax[j]);
  for (std::int64_t h0 = blockIdx.y * static_cast<std::int64_t>(kColStatRows); h0 < rows;
       h0 += static_cast<std::int64_t>(gridDim.y) * kColStatRows) {
    double sum = 0;
    const std::int64_t h1 = min(rows, h0 + kColStatRows);
    for (std::int64_t h = h0; h < h1; ++h) {
      const double v = scalbn(x[h * cols + j], e);
      sum = fma(v, v, sum);
    }
    atomicAdd(&ssq[j], sum);
  }
}

// ---- 2. residues ----------------------------------------------------------------------------------

// Eight residues of one modulus packed into the 8 bytes they are stored as (the lowest h first).
__device__ __forceinline__ uint2 pack8(int l, const long long (&v)[8]) {
  const auto byte = [&](int i) { return static_cast<unsigned>(static_cast<unsigned char>(residue(l, v[i]))); };
  return make_uint2(byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24,
                    byte(4) | byte(5) << 8 | byte(6) << 16 | byte(7) << 24);
}

// A (row-major rows x cols) -> out[l][r][h], h < kp (zeros beyond cols): a thread per 8 elements,
// one 8-byte store per modulus (kp is a multiple of 32), rows over y (rows_launch: no division of a
// 64-bit index per element).
__global__ void residues_rows(std::int64_t rows, std::int64_t cols, std::int64_t kp, const double* __restrict__ x,
                              const int* __restrict__ scale, int n_mod, signed char* __restrict__ out) {
  const std::int64_t octets = kp / 8;
  for (std::int64_t r = blockIdx.y * static_cast<std::int64_t>(blockDim.y) + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const int s = scale[r];
    const double* row = x + r * cols;
    for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < octets;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t h0 = e * 8;
      long long v[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) v[q] = h0 + q < cols ? llround(scalbn(row[h0 + q], s)) : 0;
#pragma unroll
      for (int l = 0; l < ozaki::kMaxModuli; ++l) {
        if (l >= n_mod) break;
        *reinterpret_cast<uint2*>(out + (l * rows + r) * kp + h0) = pack8(l, v);
      }
    }
  }
}

// B (row-major rows=k x cols=n) -> out[l][j][h] (B's columns K-contiguous; np >= n of them, zeros
// beyond n) through a 64 (h) x 32 (j) tile: loaded along B's rows, then each thread turns 8
// consecutive h of one column into one 8-byte store per modulus (8 threads a column: 64 bytes).
__global__ void residues_cols(std::int64_t rows, std::int64_t cols, std::int64_t np, std::int64_t kp,
                              const double* __restrict__ x, const int* __restrict__ scale, int n_mod,
                              signed char* __restrict__ out) {
  __shared__ long long tile[64][33];
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
  const int t = ty * 32 + tx, oct = t % 8, jl = t / 8;
  const std::int64_t j0 = blockIdx.x * std::int64_t{32};
  const std::int64_t j = j0 + tx, jj = j0 + jl;
  const int s = j < cols ? scale[j] : 0;
  for (std::int64_t h0 = blockIdx.y * std::int64_t{64}; h0 < kp; h0 += static_cast<std::int64_t>(gridDim.y) * 64) {
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const std::int64_t h = h0 + ty + 8 * q;
      tile[ty + 8 * q][tx] = h < rows && j < cols ? llround(scalbn(x[h * cols + j], s)) : 0;
    }
    __syncthreads();
    const std::int64_t hh = h0 + 8 * oct;
    if (jj < np && hh < kp) {
      long long v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = tile[8 * oct + i][jl];
#pragma unroll
      for (int l = 0; l < ozaki::kMaxModuli; ++l) {
        if (l >= n_mod) break;
        *reinterpret_cast<uint2*>(out + (l * np + jj) * kp + hh) = pack8(l, v);
      }
    }
    __syncthreads();
  }
}

// ---- 4. the rebuild ---------------------------------------------------------------------------------

// A two's-complement 128-bit integer times 2^scale as a double, rounded once (to nearest) where
// the result is normal: the top 64 bits with a sticky bit for the rest, then one conversion.
__device__ __forceinline__ double to_double(u128 v, int scale) {
  const bool negative = static_cast<long long>(static_cast<ull>(v >> 64)) < 0;
  const u128 mag = negative ? u128{0} - v : v;
  const ull hi = static_cast<ull>(mag >> 64);
  double d;
  if (hi == 0) {
    d = ldexp(__ull2double_rn(static_cast<ull>(mag)), scale);
  } else {
    const int shift = 64 - __clzll(static_cast<long long>(hi));  // 1..63: bits above the low 64
    const ull top = static_cast<ull>(mag >> shift) | ((mag & ((u128{1} << shift) - 1)) != 0 ? 1ull : 0ull);
    d = ldexp(__ull2double_rn(top), shift + scale);
  }
  return negative ? -d : d;
}

// The rebuild's constants in 32-bit limbs (made on the host from ozaki::Rebuild, ozaki_gpu's
// rebuild_consts): M_l and P modulo 2^128, the inverses, the offset that turns a residue of
// v + 2^31 into one of v, and 2^32 / p_l rounded, for the quotient.
struct RebuildConsts {
  int n = 0;
  unsigned inv[ozaki::kMaxModuli] = {};
  unsigned offset[ozaki::kMaxModuli] = {};  // ((p_l - 2^31 mod p_l) inv_l) mod p_l
  unsigned w[ozaki::kMaxModuli] = {};       // round(2^32 / p_l)
  unsigned m[ozaki::kMaxModuli][4] = {};    // M_l's limbs, low first
  unsigned p[4] = {};                       // P's
};

// C' from the limb sums of S = sum u_l M_l and the fixed-point sum f of u_l round(2^32 / p_l)
// (rebuild_band): q = round(f / 2^32), then S - qP limb by limb (each limb's difference within
// +-2^46), the carries passed up once (d >> 32: nvcc shifts a negative long long arithmetically,
// floor(d / 2^32)); C' modulo 2^128.
__device__ __forceinline__ u128 crt_value(const ull (&s)[4], ull f, const RebuildConsts& rc) {
  const auto q = static_cast<long long>((f + (1ull << 31)) >> 32);
  long long d = static_cast<long long>(s[0]) - q * rc.p[0];
  const ull l0 = static_cast<unsigned>(d);
  d = static_cast<long long>(s[1]) - q * rc.p[1] + (d >> 32);
  const ull l1 = static_cast<unsigned>(d);
  d = static_cast<long long>(s[2]) - q * rc.p[2] + (d >> 32);
  const ull l2 = static_cast<unsigned>(d);
  d = static_cast<long long>(s[3]) - q * rc.p[3] + (d >> 32);
  const ull l3 = static_cast<unsigned>(d);
  return (static_cast<u128>(l3 << 32 | l2) << 64) | (l1 << 32 | l0);
}

// C's band of `rows` rows (C's row r at c + r * ldc) from the n_mod products (prods[l][r][j] at
// l * stride + r * np + j; np and stride multiples of 16, prods 256-byte aligned), rows over y
// (rows_launch), four columns a thread read as one 16-byte load per modulus (columns n..np-1 are
// the GEMMs' padding: read, not written). Per element and modulus: u_l = v_l inv_l mod p_l from
// the int32 product v_l (taken as the unsigned v_l + 2^31, reduced by a constant, the 2^31 folded
// into `offset`), then u_l M_l added limb by limb into four 64-bit sums (each below 20 * 2^40: no
// carry until the end) and u_l round(2^32 / p_l) into the quotient's fixed-point sum. q = round(sum
// u_l / p_l) is exact with 2^-32 steps: C' = S - qP lies within P/4 of 0 (the plan's |C'| <=
// 2^(a+b) <= P/4), so sum u_l / p_l = q + C'/P is never near a half. Then S - qP modulo 2^128,
// carried once, is C' exactly, as the host's 128-bit sum gives it.
__global__ void rebuild_band(std::int64_t rows, std::int64_t cols, std::int64_t np, const int* __restrict__ prods,
                             std::int64_t stride, const int* __restrict__ scale_a, const int* __restrict__ scale_b,
                             RebuildConsts rc, double* __restrict__ c, std::int64_t ldc, bool accumulate) {
  const std::int64_t quads = (cols + 3) / 4, stride4 = stride / 4;
  for (std::int64_t r = blockIdx.y * static_cast<std::int64_t>(blockDim.y) + threadIdx.y; r < rows;
       r += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const int sa = scale_a[r];
    for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < quads;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t j0 = e * 4;
      const int4* at = reinterpret_cast<const int4*>(prods + r * np + j0);
      ull s[4][4] = {}, f[4] = {};
#pragma unroll
      for (int l = 0; l < ozaki::kMaxModuli; ++l) {
        if (l >= rc.n) break;
        const int4 v = at[l * stride4];
        const int vs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const unsigned t = static_cast<unsigned>(vs[q]) ^ 0x80000000u;  // v + 2^31
          const unsigned u = with_modulus(l, [&](auto p) {
            constexpr unsigned P = decltype(p)::value;
            return ((t % P) * rc.inv[l] + rc.offset[l]) % P;
          });
#pragma unroll
          for (int i = 0; i < 4; ++i) s[q][i] += static_cast<ull>(u) * rc.m[l][i];
          f[q] += static_cast<ull>(u) * rc.w[l];
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const std::int64_t j = j0 + q;
        if (j >= cols) break;
        const double out = to_double(crt_value(s[q], f[q], rc), -(sa + scale_b[j]));  // zero rows: C' = 0
        double* to = c + r * ldc + j;
        *to = accumulate ? *to + out : out;
      }
    }
  }
}

RebuildConsts rebuild_consts(const ozaki::Rebuild& rb) {
  RebuildConsts rc;
  rc.n = rb.n;
  const auto limbs = [](std::uint64_t lo, std::uint64_t hi, unsigned* out) {
    out[0] = static_cast<unsigned>(lo), out[1] = static_cast<unsigned>(lo >> 32);
    out[2] = static_cast<unsigned>(hi), out[3] = static_cast<unsigned>(hi >> 32);
  };
  for (int l = 0; l < rb.n; ++l) {
    const auto p = static_cast<std::uint64_t>(rb.p[l]), inv = static_cast<std::uint64_t>(rb.inv[l]);
    rc.inv[l] = static_cast<unsigned>(inv);
    rc.offset[l] = static_cast<unsigned>((p - (std::uint64_t{1} << 31) % p) % p * inv % p);
    rc.w[l] = static_cast<unsigned>(((std::uint64_t{1} << 32) + p / 2) / p);
    limbs(rb.m_lo[l], rb.m_hi[l], rc.m[l]);
  }
  limbs(rb.p_lo, rb.p_hi, rc.p);
  return rc;
}

// ---- the launcher --------------------------------------------------------------------------------

constexpr int kThreads = 256;

std::size_t align256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

unsigned blocks_for(std::int64_t work) {
  return static_cast<unsigned>(std::min<std::int64_t>(std::max<std::int64_t>(ceil_div(work, kThreads), 1),
                                                      std::int64_t{multiprocessors()} * 16));
}

// A launch over `rows` rows of `per_row` items a thread each: threads and blocks x over a row's
// items, y over rows (both strided), kThreads threads a block (a row's items rounded up to a warp,
// the rest of the block on further rows), about 16 blocks an SM in all.
struct Launch {
  dim3 grid, block;
};
Launch rows_launch(std::int64_t rows, std::int64_t per_row) {
  std::int64_t tx = 32;
  while (tx < kThreads && tx < per_row) tx *= 2;
  const std::int64_t ty = kThreads / tx;
  const std::int64_t x = std::max<std::int64_t>(1, std::min<std::int64_t>(ceil_div(per_row, tx), 64));
  const std::int64_t budget = std::int64_t{multiprocessors()} * 16;
  const std::int64_t y = std::max<std::int64_t>(1, std::min({ceil_div(rows, ty), ceil_div(budget, x), kMaxGridY}));
  return {dim3(static_cast<unsigned>(x), static_cast<unsigned>(y)),
          dim3(static_cast<unsigned>(tx), static_cast<unsigned>(ty))};
}

// $TESSERA_OZAKI_MODULI: a fixed number of moduli (the bench's sweep, the tests' small plans);
// $TESSERA_OZAKI_GUARD: the rule's spare bits (default 4: measured, docs/kernels.md "Ozaki");
// $TESSERA_OZAKI_PROFILE=1: the steps' times on stderr. Checked at start-up with tessera's other
// variables (core/env.hpp).
int env_int(const char* name, int fallback) {
  const std::optional<std::int64_t> value = env::whole(name);
  return value ? static_cast<int>(*value) : fallback;
}

// cuBLAS DGEMM instead, and why (the report's precision line).
void run_dgemm(const GpuGemm& g, GpuContext& ctx, const std::string& why) {
  ctx.set_note("f64-ozaki ran cuBLAS DGEMM: " + why);
  gpu_cublas_gemm(g, ctx);
}

std::string sci(double v, const char* format) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// $TESSERA_OZAKI_PROFILE=1: the time of each step on stderr (a diagnostic for tuning; it waits
// for the stream at the end): 0 the pre-pass and its read-back, 1 the residues, 2 the int8
// GEMMs, 3 the rebuilds (summed over bands).
class Profile {
 public:
  explicit Profile(cudaStream_t stream) : stream_(stream), on_(env::flag("TESSERA_OZAKI_PROFILE", false)) {
    if (!on_) return;
    for (cudaEvent_t& e : events_) CUDA_CHECK(cudaEventCreate(&e));
    CUDA_CHECK(cudaEventRecord(events_[0], stream_));
  }
  ~Profile() {
    if (on_)
      for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  }
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  // The step that just ended.
  void mark(int step) {
    if (!on_ || next_ >= kEvents) return;
    CUDA_CHECK(cudaEventRecord(events_[next_], stream_));
    steps_[next_] = step;
    ++next_;
  }
  bool on() const { return on_; }
  void report(double int_ops, int moduli, const std::string& gemms) {
    if (!on_) return;
    CUDA_CHECK(cudaEventSynchronize(events_[next_ - 1]));
    double ms[4] = {0, 0, 0, 0};
    for (int e = 1; e < next_; ++e) {
      float t = 0;
      CUDA_CHECK(cudaEventElapsedTime(&t, events_[e - 1], events_[e]));
      ms[steps_[e]] += t;
    }
    std::fprintf(stderr,
                 "f64-ozaki profile: pre-pass %.2f ms, residues %.2f ms, %d int8 GEMMs %.2f ms (%.0f TOPS), "
                 "rebuild %.2f ms; GEMMs by %s\n",
                 ms[0], ms[1], moduli, ms[2], int_ops / (ms[2] * 1e-3) / 1e12, ms[3], gemms.c_str());
  }

 private:
  static constexpr int kEvents = 64;
  cudaStream_t stream_;
  bool on_;
  cudaEvent_t events_[kEvents] = {};
  int steps_[kEvents] = {};
  int next_ = 1;
};

// What f64-ozaki made of a B its caller promised unchanged from call to call (GpuGemm::b_key: one
// B for many tiles of A's rows): what the host made of B's column statistics (the spread, the
// exponents, the scales for the bits last asked), and which residues of B lie in the operand
// scratch (after cuBLASLt's workspace) -- still there while no other call took the scratch and it
// did not grow. The pre-pass of B and its residues cost about 3 and 11 ms per
// call at K = 65536, N = 8192 on the H100, whatever A's tile.
struct KeptB {
  std::uint64_t key = 0;
  std::int64_t k = 0, n = 0;
  double spread = 0;           // the worst log2(rms / mean) of B's columns
  std::vector<int> exponents;  // of each column's largest magnitude
  std::vector<double> ssq;     // each column's sum of squares after 2^-exponent
  std::vector<int> scales;     // the columns' scales for scale_bits (0: none made)
  int scale_bits = 0;
  int n_mod = 0, b_bits = 0;  // the residues' (n_mod 0: none kept)
  const void* base = nullptr;
  std::uint64_t scratch_calls = 0;  // ctx.operand_scratch_calls() after this kernel's last call
};

void run_ozaki(const GpuGemm& g, GpuContext& ctx) {
  static const bool moduli_match = [] {
    for (int l = 0; l < ozaki::kMaxModuli; ++l)
      if (ozaki::moduli()[static_cast<std::size_t>(l)] != kModuli[l]) return false;
    return true;
  }();
  if (!moduli_match) throw DeviceError("f64-ozaki: the device's moduli differ from ozaki::moduli()");
  if (g.k > ozaki::kMaxK)
    return run_dgemm(g, ctx, "K = " + std::to_string(g.k) + " is above 131071, where the int32 products stay exact");
  // kp, np: K and N padded for cuBLAS's int8 kernels (leading dimensions and sizes multiples of 16).
  const std::int64_t m = g.m, n = g.n, k = g.k, kp = ceil_div(k, kPad) * kPad, np = ceil_div(n, 16) * 16;
  const auto* a = static_cast<const double*>(g.a);
  const auto* b = static_cast<const double*>(g.b);

  // What an earlier call kept of this B (GpuGemm::b_key): its columns' statistics, perhaps its
  // residues too (below).
  std::shared_ptr<void>& slot = ctx.kept("f64-ozaki");
  if (!slot) slot = std::make_shared<KeptB>();
  KeptB& kept = *static_cast<KeptB*>(slot.get());
  const bool b_known = g.b_key != 0 && kept.key == g.b_key && kept.k == k && kept.n == n;

  // 1. the pre-pass: largest magnitudes and sums of magnitudes, then sums of squares; read back.
  // A's rows in segments where the rows alone are too few warps to fill the GPU (a job's tiles of
  // 256-1024 rows), their partial sums after the final ones.
  const std::int64_t target_warps = std::int64_t{multiprocessors()} * 64;
  const int segs =
      static_cast<int>(std::max<std::int64_t>(1, std::min(ceil_div(target_warps, m), ceil_div(k, std::int64_t{512}))));
  const std::int64_t seg_len = ceil_div(ceil_div(k, segs), 32) * 32;
  const auto rows_cols = static_cast<std::size_t>(m + n);
  const std::size_t parts = segs > 1 ? static_cast<std::size_t>(m) * static_cast<std::size_t>(segs) : 0;
  const std::size_t stats_bytes =
      rows_cols * (sizeof(ull) + 2 * sizeof(double) + sizeof(int)) + parts * (sizeof(ull) + 2 * sizeof(double));
  auto* stats = static_cast<unsigned char*>(ctx.scratch(stats_bytes));
  auto* amax_a = reinterpret_cast<ull*>(stats);
  ull* amax_b = amax_a + m;
  auto* l1_a = reinterpret_cast<double*>(amax_b + n);
  double* l1_b = l1_a + m;
  double* ssq_a = l1_b + n;
  double* ssq_b = ssq_a + m;
  auto* amax_part = reinterpret_cast<ull*>(ssq_b + n);  // (segs > 1)
  auto* l1_part = reinterpret_cast<double*>(amax_part + parts);
  double* ssq_part = l1_part + parts;
  auto* scale_a = reinterpret_cast<int*>(ssq_part + parts);
  int* scale_b = scale_a + m;
  Profile profile(g.stream);
  const unsigned row_blocks = blocks_for(m * segs * 32);
  row_stats<<<row_blocks, kThreads, 0, g.stream>>>(m, k, segs, seg_len, a, segs > 1 ? amax_part : amax_a,
                                                   segs > 1 ? l1_part : l1_a);
  CUDA_CHECK_LAUNCH();
  row_ssq<<<row_blocks, kThreads, 0, g.stream>>>(m, k, segs, seg_len, a, segs > 1 ? amax_part : amax_a,
                                                 segs > 1 ? ssq_part : ssq_a);
  CUDA_CHECK_LAUNCH();
  if (segs > 1) {
    row_finish<<<blocks_for(m), kThreads, 0, g.stream>>>(m, segs, amax_part, l1_part, ssq_part, amax_a, l1_a, ssq_a);
    CUDA_CHECK_LAUNCH();
  }
  if (!b_known) {
    CUDA_CHECK(cudaMemsetAsync(amax_b, 0, static_cast<std::size_t>(n) * sizeof(ull), g.stream));
    CUDA_CHECK(cudaMemsetAsync(l1_b, 0, static_cast<std::size_t>(n) * sizeof(double), g.stream));
    CUDA_CHECK(cudaMemsetAsync(ssq_b, 0, static_cast<std::size_t>(n) * sizeof(double), g.stream));
    const dim3 col_grid(static_cast<unsigned>(ceil_div(n, kThreads)),
                        static_cast<unsigned>(std::min<std::int64_t>(ceil_div(k, kColStatRows), kMaxGridY)));
    col_stats<<<col_grid, kThreads, 0, g.stream>>>(k, n, b, amax_b, l1_b);
    CUDA_CHECK_LAUNCH();
    col_ssq<<<col_grid, kThreads, 0, g.stream>>>(k, n, b, amax_b, ssq_b);
    CUDA_CHECK_LAUNCH();
  }
  // Read back: A's rows, and B's columns unless kept (then only A's: a tile's host work and the
  // GPU's wait for it grow with the tile, not with N).
  const auto mm = static_cast<std::size_t>(m);
  const std::size_t fresh = b_known ? mm : rows_cols;  // statistics read back
  std::vector<ull> amax(fresh);
  std::vector<double> sums(2 * fresh);  // l1 then ssq, A's rows before B's columns
  const auto down = [&](void* to, const void* from, std::size_t bytes) {
    CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, g.stream));
  };
  down(amax.data(), amax_a, fresh * sizeof(ull));
  down(sums.data(), l1_a, fresh * sizeof(double));
  down(sums.data() + fresh, b_known ? ssq_a : l1_a + rows_cols, fresh * sizeof(double));
  CUDA_CHECK(cudaStreamSynchronize(g.stream));

  // The worst log2(rms / mean) of rows (columns) [from, from + count) of what was read back, and
  // their exponents (+Inf: NaN, Inf, an overflowing sum).
  const double lk = std::log2(static_cast<double>(k));
  const auto spread_of = [&](std::size_t from, std::size_t count, std::vector<int>& exponents) {
    exponents.assign(count, 0);
    double worst = 0;
    for (std::size_t r = from; r < from + count; ++r) {
      if (amax[r] >= kNonFinite || !std::isfinite(sums[r]) || !std::isfinite(sums[fresh + r])) return HUGE_VAL;
      if (amax[r] == 0) continue;
      double mx = 0;
      std::memcpy(&mx, &amax[r], sizeof mx);
      const int e = std::ilogb(mx);
      exponents[r - from] = e;
      // rms / mean = sqrt(K sum x^2) / sum |x|, with sum x^2 = 4^e ssq.
      worst = std::max(worst, e + 0.5 * (std::log2(sums[fresh + r]) + lk) - std::log2(sums[r]));
    }
    return worst;
  };
  std::vector<int> exponents_a;
  const double spread_a = spread_of(0, mm, exponents_a);
  // B's side: as kept under this key, else made from what was read back (and kept for the next
  // call with the key; its residues not yet).
  KeptB unkept;  // a call without a key
  KeptB& side_b = g.b_key != 0 ? kept : unkept;
  if (!b_known) {
    if (g.b_key != 0) {
      kept = KeptB{};
      kept.key = g.b_key;
      kept.k = k;
      kept.n = n;
    }
    side_b.spread = spread_of(mm, static_cast<std::size_t>(n), side_b.exponents);
    side_b.ssq.assign(sums.begin() + static_cast<std::ptrdiff_t>(fresh + mm), sums.end());
  }
  const double spread_b = side_b.spread;
  if (!std::isfinite(spread_a) || !std::isfinite(spread_b))  // DGEMM propagates them as it does
    return run_dgemm(g, ctx, "A or B holds NaN or Inf (or sums of magnitudes overflow)");

  // The moduli and the bits: the rule's, or a fixed count.
  const int guard = env_int("TESSERA_OZAKI_GUARD", 4);
  const int forced = env_int("TESSERA_OZAKI_MODULI", 0);
  const int n_mod =
      forced > 0 ? std::min(forced, ozaki::max_moduli()) : ozaki::moduli_for_spread(spread_a, spread_b, k, guard);
  if (n_mod == 0) {
    return run_dgemm(g, ctx,
                     "a row of A or column of B has its rms magnitude 2^" + sci(std::max(spread_a, spread_b), "%.1f") +
                         " times its mean: more bits than an int64 holds (62)");
  }
  ozaki::Plan plan;
  try {
    plan = ozaki::plan_for(n_mod, k);
  } catch (const std::invalid_argument&) {
    return run_dgemm(g, ctx,
                     std::to_string(n_mod) + " moduli (TESSERA_OZAKI_MODULI) are too few for K = " + std::to_string(k));
  }
  int a_bits = plan.a, b_bits = plan.b;
  if (forced == 0) {  // split a + b as the two sides need it
    const ozaki::Bits need = ozaki::bits_needed(spread_a, spread_b, guard);
    const int need_a = need.a, need_b = need.b;
    const int extra = plan.a + plan.b - need_a - need_b;
    a_bits = std::min(62, need_a + extra / 2);
    b_bits = std::min(62, plan.a + plan.b - a_bits);
  }
  // The scales, made here from the sums (as gemm_host makes them) and sent up; B's as kept where
  // made for these bits before.
  std::vector<int> scales(rows_cols, 0);
  for (std::size_t r = 0; r < mm; ++r)
    if (amax[r] != 0) scales[r] = ozaki::scale_for_norm(exponents_a[r], sums[fresh + r], a_bits);
  if (side_b.scale_bits != b_bits) {
    side_b.scales.assign(static_cast<std::size_t>(n), 0);
    for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
      if (side_b.ssq[j] != 0)  // (0 for a zero column only: any other's is at least 1)
        side_b.scales[j] = ozaki::scale_for_norm(side_b.exponents[j], side_b.ssq[j], b_bits);
    side_b.scale_bits = b_bits;
  }
  std::copy(side_b.scales.begin(), side_b.scales.end(), scales.begin() + m);
  CUDA_CHECK(cudaMemcpyAsync(scale_a, scales.data(), rows_cols * sizeof(int), cudaMemcpyHostToDevice, g.stream));

  // 2-4 in the operand scratch: residues of A and B, then the products of a band of C's rows.
  const std::size_t ra_bytes = align256(static_cast<std::size_t>(n_mod * m * kp));
  const std::size_t rb_bytes = align256(static_cast<std::size_t>(n_mod * np * kp));
  std::int64_t band = m;
  const auto prod_bytes = [&](std::int64_t rows) {
    return align256(static_cast<std::size_t>(n_mod) * static_cast<std::size_t>(rows * np) * sizeof(int));
  };
  const std::size_t ws_bytes = Int8Gemm::kWorkspaceBytes;
  const auto scratch_bytes = [&](std::int64_t rows) { return ws_bytes + ra_bytes + rb_bytes + prod_bytes(rows); };
  while (band > 64 && !ctx.operand_scratch_fits(scratch_bytes(band))) band = (band + 1) / 2;
  if (!ctx.operand_scratch_fits(scratch_bytes(band)))
    return run_dgemm(g, ctx,
                     "its int8 residues (" + sci(static_cast<double>(ra_bytes + rb_bytes) / (1 << 30), "%.1f") +
                         " GiB) do not fit in the GPU memory left");
  // Laid out from a 256-byte aligned base: cuBLASLt's workspace, B's residues (where they stay
  // from call to call under one b_key), A's, the products.
  bool b_residues_kept = b_known && kept.n_mod == n_mod && kept.b_bits == b_bits &&
                         kept.scratch_calls == ctx.operand_scratch_calls() &&
                         ctx.operand_scratch_capacity() >= scratch_bytes(band);  // (no other call, no growth)
  auto* base = static_cast<unsigned char*>(ctx.operand_scratch(scratch_bytes(band)));
  b_residues_kept = b_residues_kept && base == kept.base;
  void* workspace = base;
  auto* rbq = reinterpret_cast<signed char*>(base + ws_bytes);
  auto* ra = reinterpret_cast<signed char*>(base + ws_bytes + rb_bytes);
  auto* prods = reinterpret_cast<int*>(base + ws_bytes + rb_bytes + ra_bytes);

  profile.mark(0);
  const Launch for_a = rows_launch(m, kp / 8);
  residues_rows<<<for_a.grid, for_a.block, 0, g.stream>>>(m, k, kp, a, scale_a, n_mod, ra);
  CUDA_CHECK_LAUNCH();
  if (!b_residues_kept) {
    kept.n_mod = 0;  // (invalid until they are made)
    const dim3 grid(static_cast<unsigned>(ceil_div(np, 32)),
                    static_cast<unsigned>(std::min<std::int64_t>(ceil_div(kp, 64), kMaxGridY)));
    residues_cols<<<grid, dim3(32, 8), 0, g.stream>>>(k, n, np, kp, b, scale_b, n_mod, rbq);
    CUDA_CHECK_LAUNCH();
    if (g.b_key != 0 && kept.key == g.b_key) {
      kept.n_mod = n_mod;
      kept.b_bits = b_bits;
      kept.base = base;
    }
  }
  if (g.b_key != 0 && kept.key == g.b_key) kept.scratch_calls = ctx.operand_scratch_calls();

  {
    const double ea = std::ldexp(1.0, 1 - a_bits), eb = std::ldexp(1.0, 1 - b_bits);
    const double kd = static_cast<double>(k);
    ctx.set_note("f64-ozaki: " + std::to_string(n_mod) + " moduli, rows of A to norms of 2^" + std::to_string(a_bits) +
                 ", columns of B to 2^" + std::to_string(b_bits) + " (rms/mean up to 2^" + sci(spread_a, "%.1f") +
                 ", 2^" + sci(spread_b, "%.1f") + "): |C_ij - (AB)_ij| <= " +
                 sci(std::sqrt(kd) * (ea + eb) + kd * ea * eb, "%.2e") + " ||A_i.|| ||B_.j|| + 2^-53 |C_ij|");
  }
  const RebuildConsts rebuild = rebuild_consts(ozaki::rebuild_for(n_mod));
  auto* c = static_cast<double*>(g.c);
  // The int8 products, column-major: C_l^T (np x rows) = RB_l^T (np x kp) * RA_l band (kp x rows),
  // through cuBLASLt's fastest algorithm for the shape (kernels/int8_gemm.hpp). The addresses'
  // alignments: RB_l at l np kp, RA_l's bands at (l m + i0) kp, the products at l rows np ints.
  const int align_rb = pow2_alignment(static_cast<std::uint64_t>(np * kp));
  const int align_ra = std::min(pow2_alignment(static_cast<std::uint64_t>(m * kp)),
                                pow2_alignment(static_cast<std::uint64_t>(band * kp)));
  std::optional<Int8Gemm> gemm;
  std::int64_t gemm_rows = -1;
  std::string gemm_summary;  // what each Int8Gemm ran, for the profile
  const auto summarise = [&] {
    if (gemm && profile.on()) gemm_summary += (gemm_summary.empty() ? "" : "; ") + gemm->summary();
  };
  profile.mark(1);
  for (std::int64_t i0 = 0; i0 < m; i0 += band) {
    const std::int64_t rows = std::min(band, m - i0);
    if (rows != gemm_rows) {  // the first band, or a shorter last one
      summarise();
      gemm.emplace(ctx, g.stream, np, rows, kp, align_rb, align_ra,
                   pow2_alignment(static_cast<std::uint64_t>(rows * np) * sizeof(int)), workspace);
      gemm_rows = rows;
    }
    for (int l = 0; l < n_mod; ++l) gemm->run(rbq + l * np * kp, ra + (l * m + i0) * kp, prods + l * rows * np);
    profile.mark(2);
    const Launch launch = rows_launch(rows, ceil_div(n, std::int64_t{4}));
    rebuild_band<<<launch.grid, launch.block, 0, g.stream>>>(rows, n, np, prods, rows * np, scale_a + i0, scale_b,
                                                             rebuild, c + i0 * n, n, g.accumulate);
    CUDA_CHECK_LAUNCH();
    profile.mark(3);
  }
  summarise();
  profile.report(2.0 * static_cast<double>(m) * static_cast<double>(np) * static_cast<double>(kp) * n_mod, n_mod,
                 gemm_summary);
}

bool ozaki_can_implement(const GpuGemm& g, std::string* why) {
  if (g.dtype != DType::f64) {
    if (why) *why = "f64-ozaki takes float64 (it rebuilds float64 results from int8 products)";
    return false;
  }
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) {
    if (why) *why = "f64-ozaki calls cuBLAS, which takes sizes below 2^31";
    return false;
  }
  return true;
}

}  // namespace

std::vector<GpuKernel> ozaki_kernels() {
  GpuKernel kernel("f64-ozaki",
                   "float64 through the Ozaki scheme II: int8 residues of scaled A and B, cuBLAS INT8 GEMMs, a "
                   "CRT rebuild; as accurate as DGEMM by its rule, DGEMM itself for NaN/Inf or wide spreads (opt-in)",
                   &ozaki_can_implement, &run_ozaki, 0.0,
                   // Opt-in although full precision: a job runs it on tiles of A's rows, where it
                   // did not beat DGEMM on the H100 (docs/kernels.md), while tune times whole calls.
                   true);
  kernel.accumulates = true;
  kernel.uses_cublas = true;
  return {kernel};
}

}  // namespace tessera::kernels
