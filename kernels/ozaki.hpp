#pragma once
// The Ozaki scheme II for float64 GEMM on integer arithmetic (issue 45; Ozaki, Uchino, Imamura,
// arXiv 2504.08009): the groundwork shared by the host reference here and the GPU engine to come.
//
//   1. Scale: row i of A by 2^s_i and column j of B by 2^t_j so that the row's (column's) 2-norm
//      is at most 2^(a-1) (2^(b-1)) after scaling, then round to integers A', B'. Rounding adds at
//      most sqrt(K)/2 to a norm, so ||A'_i|| <= 2^a and ||B'_j|| <= 2^b, and by Cauchy-Schwarz
//      |A'B'|_ij <= 2^(a+b) whatever K is (exact powers of two: only the rounding to integers
//      loses anything, at most half a unit, 2^(1-a) ||A_i|| in A's units).
//   2. Residues: A' and B' modulo each of N pairwise-coprime moduli p_l <= 256, in the symmetric
//      range (|r| <= 128): int8 values.
//   3. Products: C_l = R_A,l R_B,l for each modulus, exact in int32 while K * 128^2 < 2^31
//      (K <= 131071): the INT8 tensor cores' GEMM on a GPU.
//   4. Rebuild: C' = A'B' is the symmetric residue of S = sum_l u_l M_l modulo P = prod p_l
//      (Chinese remainder theorem: M_l = P / p_l, u_l = (C_l mod p_l) (M_l^-1 mod p_l) in [0, p_l)).
//      S / P = sum_l u_l / p_l = q + C' / P with |C'| <= 2^(a+b) <= P / 4, so q is that sum
//      rounded to the nearest integer, which float64 gets right (its error is ~1e-15, the margin
//      1/4), and C' = S - q P. That identity holds modulo 2^128 too: computed with wrapping
//      128-bit integers (M_l and P taken modulo 2^128), it gives C' exactly as long as
//      |C'| < 2^127, whatever the size of P (Rebuild below; the host and the GPU share it).
//      C = 2^(-s_i - t_j) C', rounded once to float64.
//
// Error (docs/kernels.md "Ozaki"): each element of row i of A moves by at most 2^(1-a) ||A_i||
// (B's column j by 2^(1-b) ||B_j||), so with ||x||_1 <= sqrt(K) ||x||_2
//   |C_ij - fl(C'_ij 2^(-s_i-t_j))| <= (sqrt(K) (2^(1-a) + 2^(1-b)) + K 2^(2-a-b)) ||A_i|| ||B_j|| + u |C_ij|.
// What DGEMM does is far from its worst case (measured on the H200: about 3 u (|A||B|)_ij at
// most, at any K); the scheme's error is a random walk of K input roundings, about
// 2^-a sqrt(K) ||A_i|| rms(B_j), against (|A||B|)_ij ~ K mean|A_i| mean|B_j|: a ratio of
// 2^(53-a) (rms/mean of A's row) (rms/mean of B's column) / 3 to DGEMM's. Hence the rule
// (moduli_for_spread): a >= 53 + guard + ceil(log2(rms/mean)) per side.
// Kernels know nothing of MPI or HDF5; this file knows nothing of CUDA either.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::kernels::ozaki {

// The moduli, in the order they are used: 256 and the largest odd numbers below it that are
// coprime with every one before them (so any leading N of them are pairwise coprime): 256, 255,
// 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173.
const std::vector<int>& moduli();
// How many of them a plan may use (20). Beyond 17 they add nothing: the rebuilt product must stay
// below 2^127 in magnitude (2^(a+b) <= 2^126), and a, b <= 62 (int64 scaled values).
int max_moduli();

// How a product of inner dimension k is split: n moduli, and the bits a (rows of A) and b
// (columns of B) the scaled integers may take.
struct Plan {
  int n = 0;          // moduli used: moduli()[0, n)
  int a = 0, b = 0;   // ||A'_i|| <= 2^a, ||B'_j|| <= 2^b (a + b = min(floor(log2 P) - 2, 126))
  double log2_p = 0;  // log2 of the product of the moduli
  std::int64_t k = 0;
};
// The plan for `n` moduli (1..max_moduli()) and inner dimension k (1..kMaxK). Throws
// std::invalid_argument outside those ranges or where a or b would be below 1.
Plan plan_for(int n, std::int64_t k);
// The fewest moduli whose plan gives a and b of at least `bits` each (e.g. 53 + ceil(log2 k) + g
// for the error above); 0 when max_moduli() are not enough.
int moduli_for_bits(int bits, std::int64_t k);

// The rebuild's constants for n moduli (step 4 above), as the GPU kernel takes them: everything
// modulo 2^128 as two 64-bit words.
constexpr int kMaxModuli = 20;
struct Rebuild {
  int n = 0;
  int p[kMaxModuli] = {};               // the moduli
  int inv[kMaxModuli] = {};             // (M_l mod p_l)^-1 mod p_l
  double recip[kMaxModuli] = {};        // 1 / p_l
  std::uint64_t m_lo[kMaxModuli] = {};  // M_l = P / p_l modulo 2^128, low word
  std::uint64_t m_hi[kMaxModuli] = {};  // and high word
  std::uint64_t p_lo = 0, p_hi = 0;     // P modulo 2^128
};
Rebuild rebuild_for(int n);

// The moduli issue 45's engine takes for a product of inner dimension k whose rows of A have
// rms_h|A_ih| / mean_h|A_ih| up to 2^spread_a (columns of B: 2^spread_b; both >= 1 always):
// enough bits that the scheme's expected error stays below float64 DGEMM's (the comparison
// above, with `guard` bits to spare):
//   bits = 53 + guard + ceil(spread),   at least 10,
// each side on its own. Where that is more than an int64's 62 bits, the guard gives way down to
// kMinGuard (62 bits a side, 17 moduli; measured: phi 2 and 3 data then err below a float64 FMA
// sum, docs/kernels.md). 0 when even that is more than 62 or max_moduli() do not give them: the
// caller runs DGEMM.
constexpr int kMinGuard = 2;
struct Bits {
  int a = 0, b = 0;  // 0: no plan covers the spread
};
Bits bits_needed(double spread_a, double spread_b, int guard);
int moduli_for_spread(double spread_a, double spread_b, std::int64_t k, int guard);
int bits_for_spread(double spread, int guard);
// The scale s of a row (column) whose largest element has exponent e_max (ilogb) and whose sum of
// squares, each element scaled by 2^-e_max, is ssq: 2^s ||x|| <= 2^(bits-1).
int scale_for_norm(int e_max, double ssq, int bits);
constexpr std::int64_t kMaxK = 131071;  // K * 128^2 < 2^31: the int32 products stay exact

// Bound on |C_ij - computed C_ij| beyond the final rounding, for a row of A of 2-norm norm_a and a
// column of B of 2-norm norm_b (the formula above).
double error_bound(const Plan& plan, double norm_a, double norm_b);

// C = A B, row-major (A m x k, lda; B k x n, ldb; C m x n, ldc), through the scheme on the host:
// int64 scaled integers, int8 residues, their products in exact integer arithmetic (as the INT8
// GEMM computes them), the rebuild in wrapping 128-bit integers (Rebuild, as on the GPU). The reference the GPU engine
// is checked against, and a test of the plan and the bound. A row of A or column of B that holds a NaN or an Inf makes
// it return false (nothing written): the caller falls back to DGEMM, which propagates them; an all-zero row or column
// gives zeros. Throws std::invalid_argument for a bad plan.
bool gemm_host(const Plan& plan, std::int64_t m, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda,
               const double* b, std::int64_t ldb, double* c, std::int64_t ldc);

}  // namespace tessera::kernels::ozaki
