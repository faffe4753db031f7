// The Ozaki scheme II on the host (ozaki.hpp): the plan, and the reference GEMM through it.
#include "kernels/ozaki.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tessera::kernels::ozaki {
namespace {

__extension__ typedef unsigned __int128 u128;  // (GCC and Clang on 64-bit targets)
__extension__ typedef __int128 i128;

int ceil_log2(std::int64_t k) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < k) ++bits;
  return bits;
}

// x^-1 mod p (p a small modulus, x coprime with it).
int inverse_mod(int x, int p) {
  for (int y = 1; y < p; ++y)
    if ((x * y) % p == 1) return y;
  throw std::logic_error("ozaki: moduli not coprime");
}

// The symmetric residue of x modulo p (|r| <= p / 2): an int8 value for p <= 256.
int symmetric_residue(std::int64_t x, int p) {
  auto r = static_cast<int>(((x % p) + p) % p);
  if (r > (p - 1) / 2) r -= p;  // 256: [-128, 127]; odd p: [-(p-1)/2, (p-1)/2]
  return r;
}

// Row scales (ozaki.hpp, step 1): from each row's largest magnitude (NaN/Inf: false) and its
// sum of squares scaled by 2^-2e (e its largest element's exponent: no overflow), scale_for_norm.
bool scales(std::int64_t rows, std::int64_t cols, const double* x, std::int64_t row_step, std::int64_t col_step,
            int bits, std::vector<int>* scale) {
  scale->assign(static_cast<std::size_t>(rows), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double amax = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double v = x[r * row_step + c * col_step];
      if (!std::isfinite(v)) return false;
      amax = std::max(amax, std::fabs(v));
    }
    if (amax == 0) continue;
    const int e = std::ilogb(amax);
    double ssq = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double v = std::ldexp(x[r * row_step + c * col_step], -e);
      ssq += v * v;
    }
    (*scale)[static_cast<std::size_t>(r)] = scale_for_norm(e, ssq, bits);
  }
  return true;
}

}  // namespace

const std::vector<int>& moduli() {
  static const std::vector<int> list = [] {
    std::vector<int> out{256};
    for (int p = 255; p > 128 && out.size() < static_cast<std::size_t>(kMaxModuli); p -= 2)
      if (std::all_of(out.begin(), out.end(), [p](int q) { return std::gcd(p, q) == 1; })) out.push_back(p);
    return out;
  }();
  return list;
}

int max_moduli() { return kMaxModuli; }

Plan plan_for(int n, std::int64_t k) {
  if (n < 1 || n > max_moduli())
    throw std::invalid_argument("ozaki: " + std::to_string(n) + " moduli (1 to " + std::to_string(max_moduli()) +
                                " here)");
  if (k < 1 || k > kMaxK)
    throw std::invalid_argument("ozaki: K = " + std::to_string(k) + " (1 to " + std::to_string(kMaxK) +
                                ": the int32 products must stay exact)");
  Plan plan;
  plan.n = n;
  plan.k = k;
  for (int l = 0; l < n; ++l) plan.log2_p += std::log2(moduli()[static_cast<std::size_t>(l)]);
  // |C'_ij| <= ||A'_i|| ||B'_j|| <= 2^(a+b) <= 2^(floor(log2 P) - 2) <= P / 4: the rebuilt product's
  // symmetric residue is itself, with room for the rounded quotient; and <= 2^126: it fits the
  // rebuild's wrapping 128 bits. K does not enter: the norms already hold it.
  const int sum = std::min(static_cast<int>(std::floor(plan.log2_p)) - 2, 126);
  plan.a = std::min(62, sum / 2);  // (int64 scaled integers)
  plan.b = std::min(62, sum - sum / 2);
  // The rounding to integers adds at most sqrt(K) / 2 to a row's norm: within the 2^(a-1) of room
  // scale_for_norm leaves while 2^(a-1) >= sqrt(K) / 2, i.e. a >= ceil(log2 K) / 2 + 1.
  if (plan.a < (ceil_log2(k) + 1) / 2 + 1 || plan.b < (ceil_log2(k) + 1) / 2 + 1)
    throw std::invalid_argument("ozaki: " + std::to_string(n) + " moduli leave no bits for K = " + std::to_string(k));
  return plan;
}

int moduli_for_bits(int bits, std::int64_t k) {
  for (int n = 1; n <= max_moduli(); ++n) {
    try {
      const Plan p = plan_for(n, k);
      if (p.a >= bits && p.b >= bits) return n;
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}

Rebuild rebuild_for(int n) {
  if (n < 1 || n > max_moduli()) throw std::invalid_argument("ozaki: " + std::to_string(n) + " moduli");
  Rebuild r;
  r.n = n;
  u128 p_all = 1;  // modulo 2^128: unsigned arithmetic wraps
  for (int l = 0; l < n; ++l) p_all *= static_cast<u128>(moduli()[static_cast<std::size_t>(l)]);
  r.p_lo = static_cast<std::uint64_t>(p_all);
  r.p_hi = static_cast<std::uint64_t>(p_all >> 64);
  for (int l = 0; l < n; ++l) {
    const int pl = moduli()[static_cast<std::size_t>(l)];
    u128 ml = 1;
    int ml_mod = 1;  // M_l mod p_l, exactly
    for (int j = 0; j < n; ++j) {
      if (j == l) continue;
      const int pj = moduli()[static_cast<std::size_t>(j)];
      ml *= static_cast<u128>(pj);
      ml_mod = ml_mod * (pj % pl) % pl;
    }
    r.p[l] = pl;
    r.inv[l] = inverse_mod(ml_mod, pl);
    r.recip[l] = 1.0 / pl;
    r.m_lo[l] = static_cast<std::uint64_t>(ml);
    r.m_hi[l] = static_cast<std::uint64_t>(ml >> 64);
  }
  return r;
}

int scale_for_norm(int e_max, double ssq, int bits) {
  // ||x|| = 2^e_max sqrt(ssq); the scaled norm at most 2^(bits-1).
  return bits - 1 - static_cast<int>(std::ceil(e_max + 0.5 * std::log2(ssq)));
}

int bits_for_spread(double spread, int guard) {
  return std::max(10, 53 + guard + static_cast<int>(std::ceil(std::max(0.0, spread))));
}

Bits bits_needed(double spread_a, double spread_b, int guard) {
  if (!(spread_a >= 0) || !(spread_b >= 0) || std::isinf(spread_a) || std::isinf(spread_b)) return {};
  Bits need{bits_for_spread(spread_a, guard), bits_for_spread(spread_b, guard)};
  if (std::max(need.a, need.b) <= 62) return need;
  // Past an int64's 62 bits: the guard bits give way, down to kMinGuard (or the caller's fewer).
  const int floor_guard = std::min(guard, kMinGuard);
  if (std::max(bits_for_spread(spread_a, floor_guard), bits_for_spread(spread_b, floor_guard)) > 62) return {};
  return {std::min(need.a, 62), std::min(need.b, 62)};
}

int moduli_for_spread(double spread_a, double spread_b, std::int64_t k, int guard) {
  const Bits need = bits_needed(spread_a, spread_b, guard);
  if (need.a == 0) return 0;
  const int need_a = need.a, need_b = need.b;
  for (int n = 1; n <= max_moduli(); ++n) {
    try {
      const Plan p = plan_for(n, k);
      // a and b may be traded: the plan splits a + b evenly, the need may not be even.
      if (p.a + p.b >= need_a + need_b) return n;
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}

double error_bound(const Plan& plan, double norm_a, double norm_b) {
  const double ea = std::ldexp(1.0, 1 - plan.a), eb = std::ldexp(1.0, 1 - plan.b);
  const double k = static_cast<double>(plan.k);
  return (std::sqrt(k) * (ea + eb) + k * ea * eb) * norm_a * norm_b;
}

bool gemm_host(const Plan& plan, std::int64_t m, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda,
               const double* b, std::int64_t ldb, double* c, std::int64_t ldc) {
  if (plan.n < 1 || plan.n > max_moduli() || k > plan.k || k < 0 || m < 0 || n < 0)
    throw std::invalid_argument("ozaki: the plan does not fit this product");
  // A plan made by hand must not promise more bits than plan_for gives (the rebuild would wrap).
  const Plan checked = plan_for(plan.n, plan.k);
  if (plan.a > checked.a || plan.b > checked.b || plan.a < 1 || plan.b < 1)
    throw std::invalid_argument("ozaki: the plan's bits exceed what its moduli hold for K = " + std::to_string(plan.k));
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
    return true;
  }
  // 1. scales and scaled integers (rows of A, columns of B).
  std::vector<int> s, t;
  if (!scales(m, k, a, lda, 1, plan.a, &s) || !scales(n, k, b, 1, ldb, plan.b, &t)) return false;
  std::vector<std::int64_t> ai(static_cast<std::size_t>(m * k)), bi(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t h = 0; h < k; ++h)
      ai[static_cast<std::size_t>(i * k + h)] =
          std::llround(std::ldexp(a[i * lda + h], s[static_cast<std::size_t>(i)]));
  for (std::int64_t h = 0; h < k; ++h)
    for (std::int64_t j = 0; j < n; ++j)
      bi[static_cast<std::size_t>(h * n + j)] =
          std::llround(std::ldexp(b[h * ldb + j], t[static_cast<std::size_t>(j)]));
  // 2-4. per modulus: int8 residues, their exact product, its u_l; the rebuild's sums (wrapping
  // 128-bit S = sum u_l M_l, and sum u_l / p_l for the quotient).
  const Rebuild rb = rebuild_for(plan.n);
  const u128 p_all = (static_cast<u128>(rb.p_hi) << 64) | rb.p_lo;
  std::vector<u128> acc(static_cast<std::size_t>(m * n), 0);
  std::vector<double> frac(static_cast<std::size_t>(m * n), 0.0);
  std::vector<std::int8_t> ra(ai.size()), rb8(bi.size());
  for (int l = 0; l < plan.n; ++l) {
    const int p = rb.p[l];
    const u128 ml = (static_cast<u128>(rb.m_hi[l]) << 64) | rb.m_lo[l];
    for (std::size_t e = 0; e < ai.size(); ++e) ra[e] = static_cast<std::int8_t>(symmetric_residue(ai[e], p));
    for (std::size_t e = 0; e < bi.size(); ++e) rb8[e] = static_cast<std::int8_t>(symmetric_residue(bi[e], p));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        std::int32_t dot = 0;  // exact: k 128^2 < 2^31
        for (std::int64_t h = 0; h < k; ++h)
          dot += static_cast<std::int32_t>(ra[static_cast<std::size_t>(i * k + h)]) *
                 static_cast<std::int32_t>(rb8[static_cast<std::size_t>(h * n + j)]);
        const int u = static_cast<int>((((dot % p) + p) % p) * static_cast<std::int64_t>(rb.inv[l]) % p);
        const auto e = static_cast<std::size_t>(i * n + j);
        acc[e] += static_cast<u128>(u) * ml;  // wraps modulo 2^128
        frac[e] += u * rb.recip[l];
      }
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const auto e = static_cast<std::size_t>(i * n + j);
      const auto q = static_cast<u128>(static_cast<std::uint64_t>(std::nearbyint(frac[e])));
      const auto value = static_cast<i128>(acc[e] - q * p_all);  // |C'| < 2^127: exact
      c[i * ldc + j] =
          std::ldexp(static_cast<double>(value), -(s[static_cast<std::size_t>(i)] + t[static_cast<std::size_t>(j)]));
    }
  return true;
}

}  // namespace tessera::kernels::ozaki
