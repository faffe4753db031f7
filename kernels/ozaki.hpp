#pragma once
// The Ozaki scheme II for float64 GEMM on integer arithmetic (issue 45; Ozaki, Uchino, Imamura,
// arXiv 2504.08009): the groundwork shared by the host reference here and the GPU engine to come.
//
//   1. Scale: row i of A by 2^s_i and column j of B by 2^t_j so that every scaled element is
//      below 2^a (rows) and 2^b (columns) in magnitude, then round to integers A', B' (at most
//      2^a and 2^b: the plan's K 2^(a+b) <= P / 4 leaves room for that; exact
//      powers of two: only the rounding to integers loses anything, at most half a unit).
//   2. Residues: A' and B' modulo each of N pairwise-coprime moduli p_l <= 256, in the symmetric
//      range (|r| <= 128): int8 values.
//   3. Products: C_l = R_A,l R_B,l for each modulus, exact in int32 while K * 128^2 < 2^31
//      (K <= 131071): the INT8 tensor cores' GEMM on a GPU.
//   4. Rebuild: C' = A'B' is the symmetric residue of sum_l (C_l mod p_l) w_l modulo P = prod p_l
//      (Chinese remainder theorem, w_l = (P / p_l) ((P / p_l)^-1 mod p_l)), exact because
//      |A'B'| <= K 2^(a+b) < P / 2; C = 2^(-s_i - t_j) C', rounded once to float64.
//
// Error (the derivation, docs/kernels.md "Ozaki"): |A_ih 2^s_i - A'_ih| <= 1/2 with 2^(a-1) <=
// max_h |A_ih| 2^s_i < 2^a, so each element of A moves by at most 2^-a max_h |A_ih| (B likewise), and
//   |C_ij - fl(C'_ij 2^(-s_i-t_j))| <= K (2^-a + 2^-b + 2^(-a-b)) max_h |A_ih| max_h |B_hj| + u |C_ij|.
// With a = b = 53 + ceil(log2 K) + g that is below u 2^-g times the row and column maxima: DGEMM's
// own bound is gamma_K (|A||B|)_ij, the same size where A's rows and B's columns hold values of one
// magnitude, larger than the scheme's error by 2^g; rows or columns whose values spread over many
// powers of two (the phi) need more bits, hence more moduli, for the same relative error.
// Kernels know nothing of MPI or HDF5; this file knows nothing of CUDA either.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::kernels::ozaki {

// The moduli, in the order they are used: 256 and the largest odd numbers below it that are
// coprime with every one before them (so any leading N of them are pairwise coprime).
const std::vector<int>& moduli();

// How a product of inner dimension k is split: n moduli, and the bits a (rows of A) and b
// (columns of B) the scaled integers may take.
struct Plan {
  int n = 0;          // moduli used: moduli()[0, n)
  int a = 0, b = 0;   // |A'| <= 2^a, |B'| <= 2^b (a + b = floor(log2 P) - 2 - ceil(log2 k))
  double log2_p = 0;  // log2 of the product of the moduli
  std::int64_t k = 0;
};
// The plan for `n` moduli (1..max_moduli()) and inner dimension k (1..kMaxK). Throws
// std::invalid_argument outside those ranges or where a or b would be below 1.
Plan plan_for(int n, std::int64_t k);
// The fewest moduli whose plan gives a and b of at least `bits` each (e.g. 53 + ceil(log2 k) + g
// for the error above); 0 when max_moduli() are not enough.
int moduli_for_bits(int bits, std::int64_t k);
// The largest n this host reference takes (P below 2^120: its rebuild works in 128-bit integers).
int max_moduli();
constexpr std::int64_t kMaxK = 131071;  // K * 128^2 < 2^31: the int32 products stay exact

// Bound on |C_ij - computed C_ij| beyond the final rounding, for rows of A whose largest magnitude
// is amax and columns of B whose largest is bmax (the formula above).
double error_bound(const Plan& plan, double amax, double bmax);

// C = A B, row-major (A m x k, lda; B k x n, ldb; C m x n, ldc), through the scheme on the host:
// int64 scaled integers, int8 residues, their products in exact integer arithmetic (as the INT8
// GEMM computes them), the rebuild in 128-bit integers. The reference the GPU engine is checked
// against, and a test of the plan and the bound. A row of A or column of B that holds a NaN or an
// Inf makes it return false (nothing written): the caller falls back to DGEMM, which propagates
// them; an all-zero row or column gives zeros. Throws std::invalid_argument for a bad plan.
bool gemm_host(const Plan& plan, std::int64_t m, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda,
               const double* b, std::int64_t ldb, double* c, std::int64_t ldc);

}  // namespace tessera::kernels::ozaki
