#pragma once
// Device helpers the tiled kernels share: 16-byte vector access to registers and shared memory,
// the asynchronous global -> shared copy (cp.async, sm_80+) with zero fill for edge tiles, and
// the multistage pipelines built on it (cp_async_pipeline: tensorcore.cu; the overlapped one,
// which issues the next k block's copies inside the arithmetic, and CopyCursor, a thread's copy
// sources advanced a k block at a time: warptile.cuh, dmma.cu); the
// scalar guarded tile loads and the register outer product (regtile.cu, vectorized.cu,
// warptile.cu). Internal to kernels/.
// (Hopper's TMA + mbarrier pipeline, for wgmma, is in kernels/hopper.cuh.)
#include <cstdint>
#include <type_traits>

namespace tessera::kernels {

// 16 bytes of T: float4 or double2. Vec<T>::kWidth elements.
template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = float4;
  static constexpr int kWidth = 4;
};
template <>
struct Vec<double> {
  using type = double2;
  static constexpr int kWidth = 2;
};

// Element w of a vector, and setting it; w is a compile-time constant after unrolling, so these
// are register moves (taking a register array's address instead can put it in local memory).
__device__ __forceinline__ float vec_get(const float4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}
__device__ __forceinline__ double vec_get(const double2& v, int w) { return w == 0 ? v.x : v.y; }
__device__ __forceinline__ void vec_set(float4& v, int w, float x) {
  if (w == 0)
    v.x = x;
  else if (w == 1)
    v.y = x;
  else if (w == 2)
    v.z = x;
  else
    v.w = x;
}
__device__ __forceinline__ void vec_set(double2& v, int w, double x) {
  if (w == 0)
    v.x = x;
  else
    v.y = x;
}

// Four consecutive elements from 16-byte-aligned (shared) memory into registers: one LDS.128
// for float, two for double.
template <class T>
__device__ __forceinline__ void load4(const T* src, T* dst) {
  using V = typename Vec<T>::type;
  constexpr int W = Vec<T>::kWidth;
#pragma unroll
  for (int v = 0; v < 4 / W; ++v) {
    const V x = reinterpret_cast<const V*>(src)[v];
#pragma unroll
    for (int w = 0; w < W; ++w) dst[v * W + w] = vec_get(x, w);
  }
}

// Four consecutive registers to 16-byte-aligned memory: one 16-byte store (two for double).
template <class T>
__device__ __forceinline__ void store4(T* dst, const T* src) {
  using V = typename Vec<T>::type;
  constexpr int W = Vec<T>::kWidth;
#pragma unroll
  for (int v = 0; v < 4 / W; ++v) {
    V x;
#pragma unroll
    for (int w = 0; w < W; ++w) vec_set(x, w, src[v * W + w]);
    reinterpret_cast<V*>(dst)[v] = x;
  }
}

// Four consecutive elements of a row of C: 16-byte stores when `vec` (the row is 16-byte
// aligned, so col, a multiple of 4, is too) and all four are inside C, else scalar stores of
// the elements inside C.
template <class T>
__device__ __forceinline__ void store4_guarded(T* c_row, std::int64_t col, std::int64_t n, const T* v, bool vec) {
  if (vec && col + 3 < n) {
    store4(c_row + col, v);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (col + j < n) c_row[col + j] = v[j];
  }
}

// cp.async: copies BYTES (4, 8 or 16) from global to shared memory without a round trip through
// registers, so the copy of the next tile overlaps the arithmetic on this one. When `valid` is
// false nothing is read and the destination is filled with zeros (the src-size operand is 0):
// that is how edge tiles are padded. `src` must still be a valid global address (callers pass
// the matrix base then). 16-byte copies bypass L1 (.cg): each tile is read once per block.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const auto g = static_cast<unsigned long long>(__cvta_generic_to_global(src));
  const int src_bytes = valid ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(src_bytes) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(g), "n"(BYTES), "r"(src_bytes)
                 : "memory");
  }
}

// Closes the group of cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most N of this thread's committed groups are still in flight. Other threads'
// copies are visible only after a __syncthreads() that follows.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The multistage cp.async pipeline over the k blocks of one tile: STAGES k blocks of A and B
// live in shared memory, and while the warps compute on block kb the copies of blocks
// kb+1 .. kb+STAGES-1 are in flight. load(stage, kb) issues the copies of k block kb into
// `stage` (zero-filling outside the matrices); compute(stage) consumes a stage. One
// __syncthreads() per k block. Every thread of the block calls it with the same k_blocks.
template <int STAGES, class Load, class Compute>
__device__ __forceinline__ void cp_async_pipeline(std::int64_t k_blocks, Load&& load, Compute&& compute) {
  static_assert(STAGES >= 2, "cp_async_pipeline: at least double buffering");
  // Prologue: the first STAGES - 1 k blocks in flight. One commit group per k block, empty ones
  // included, so that "group kb" is always the kb-th commit.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_blocks) load(s, std::int64_t{s});
    cp_async_commit();
  }
  // Stages are derived from kb rather than counted: no register beyond kb's (the 128x128 float
  // warptile runs at its 128-register limit).
  for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
    // This thread's copies of block kb are done (at most STAGES - 2 younger groups pending)...
    cp_async_wait<STAGES - 2>();
    // ...and everyone's are, and every thread has finished computing on block kb - 1, whose
    // stage the prefetch below overwrites.
    __syncthreads();
    const std::int64_t next = kb + STAGES - 1;
    if (next < k_blocks) load(static_cast<int>(next % STAGES), next);
    cp_async_commit();
    compute(static_cast<int>(kb % STAGES));
  }
  // Drain the (empty) trailing groups, and let every thread finish reading the stages before
  // the caller's next tile (grid-stride loop) writes them again.
  cp_async_wait<0>();
  __syncthreads();
}

// The same pipeline with the copies of the next k block issued inside the arithmetic on this one
// (dmma.cu, warptile.cuh): compute(stage, issue) runs the k steps of `stage` and calls issue()
// once, after its first step, in the same basic block, so the compiler spreads the copies'
// address arithmetic among the first step's FMAs / DMMAs instead of leaving the math pipes idle
// while every warp, just past the barrier, works out its copies (tile_copy's first users: ~200
// integer instructions per k block there, all warps of an SM at once). load(stage) issues the next
// k block's copies (its source pointers advance themselves). Stages rotate without a division.
template <int STAGES, class Load, class Compute>
__device__ __forceinline__ void cp_async_pipeline_overlapped(std::int64_t k_blocks, Load&& load, Compute&& compute) {
  static_assert(STAGES >= 2, "cp_async_pipeline_overlapped: at least double buffering");
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_blocks) load(s);
    cp_async_commit();
  }
  int read = 0, write = STAGES - 1;
  std::int64_t kb = 0;
  // Steady state: a k block to copy in every iteration (one commit group each, as above).
  for (; kb + STAGES - 1 < k_blocks; ++kb) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // everyone's copies of block kb landed; everyone is done with kb - 1's stage
    compute(read, [&] {
      load(write);
      cp_async_commit();
    });
    read = read + 1 == STAGES ? 0 : read + 1;
    write = write + 1 == STAGES ? 0 : write + 1;
  }
  // Drain: the last STAGES - 1 k blocks (empty groups keep the count).
  for (; kb < k_blocks; ++kb) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    cp_async_commit();
    compute(read, [] {});
    read = read + 1 == STAGES ? 0 : read + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread is done reading the stages before the next tile's copies
}

// cp.async of BYTES to the shared-memory address `dst` (a __cvta_generic_to_shared value):
// always (GUARDED false), or zero-filled without reading when !valid (src then replaced by
// `fallback`, a valid global address, as cp_async does).
template <int BYTES, bool GUARDED, class T>
__device__ __forceinline__ void copy_chunk(unsigned dst, const T* src, const T* fallback, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const auto g = static_cast<unsigned long long>(__cvta_generic_to_global(GUARDED && !valid ? fallback : src));
  if constexpr (!GUARDED) {
    if constexpr (BYTES == 16)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(g) : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(g), "n"(BYTES) : "memory");
  } else {
    const int src_bytes = valid ? BYTES : 0;
    if constexpr (BYTES == 16)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(g), "r"(src_bytes) : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(g), "n"(BYTES), "r"(src_bytes)
                   : "memory");
  }
}

// ---- a thread's copy sources, advanced a k block at a time (warptile.cuh, dmma.cu) -------------

// A thread's sources of a tile's cp.async copies, a k block at a time (warptile.cuh, dmma.cu):
// its A rows a_row + j kARowStep (j < BM / kARowStep) from k offset a_k, its B rows b_row + j
// kBRowStep from column b_col, starting at k = k_lo; the copies of a k block read from a_next and
// b_next (rows a_rows_apart and b_rows_apart elements apart), then advance() moves both a k block
// on, so a copy costs a 64-bit add and the cp.async. GUARDED (the tile crosses C's edge or its
// k range ends inside a block): a_ok and b_ok say which copies read inside A and B (k < k_hi);
// unguarded, both are true and nothing is counted.
template <class T, int BM, int BK, int kARowStep, int kBRowStep, bool GUARDED>
struct CopyCursor {
  static constexpr int kARows = BM / kARowStep;
  const T* a_next;
  const T* b_next;
  std::int64_t a_rows_apart, b_rows_apart, b_block;
  int a_rows_in = kARows;                   // GUARDED: this thread's A rows inside C (rows of m)
  bool b_col_in = true;                     // GUARDED: its B column inside C (columns of n)
  std::int64_t a_k_left = 0, b_k_left = 0;  // GUARDED: k left from its A column and its B row

  __device__ __forceinline__ CopyCursor(const T* a, const T* b, std::int64_t m, std::int64_t n, std::int64_t k,
                                        std::int64_t row0, std::int64_t col0, std::int64_t k_lo, std::int64_t k_hi,
                                        int a_row, int a_k, int b_row, int b_col)
      : a_next(a + (row0 + a_row) * k + k_lo + a_k),
        b_next(b + (k_lo + b_row) * n + col0 + b_col),
        a_rows_apart(std::int64_t{kARowStep} * k),
        b_rows_apart(std::int64_t{kBRowStep} * n),
        b_block(std::int64_t{BK} * n) {
    if constexpr (GUARDED) {
      const std::int64_t left = m - row0 - a_row;
      a_rows_in = left <= 0 ? 0 : (left >= BM ? kARows : static_cast<int>((left + kARowStep - 1) / kARowStep));
      b_col_in = col0 + b_col < n;
      a_k_left = k_hi - k_lo - a_k;
      b_k_left = k_hi - k_lo - b_row;
    }
  }
  // Whether the copy of A row j at k offset dk (from a_k) of this block reads inside A.
  __device__ __forceinline__ bool a_ok(int j, int dk) const { return !GUARDED || (j < a_rows_in && a_k_left > dk); }
  // Whether the copy of B row j of this block reads inside B.
  __device__ __forceinline__ bool b_ok(int j) const { return !GUARDED || (b_col_in && j * kBRowStep < b_k_left); }
  __device__ __forceinline__ void advance() {
    a_next += BK;
    b_next += b_block;
    if constexpr (GUARDED) {
      a_k_left -= BK;
      b_k_left -= BK;
    }
  }
};

// ---- the mma kernels' C stores -----------------------------------------------------------------

// Two consecutive elements of a row of C (a pair of an mma accumulator fragment; tensorcore.cu,
// dmma.cu, wgmma.cu): C = (x, y), or
// C += (x, y) when ACCUMULATE (read where it is written: each element belongs to one thread).
// One 8-byte (float) or 16-byte (double) access when the row is aligned for it, else guarded
// scalars.
template <bool ACCUMULATE, class T>
__device__ __forceinline__ void store_pair(T* c, std::int64_t m, std::int64_t n, std::int64_t r, std::int64_t col, T x,
                                           T y, bool vec) {
  if (r >= m) return;
  T* p = c + r * n + col;
  if (vec && col + 1 < n) {
    using V2 = std::conditional_t<sizeof(T) == 4, float2, double2>;
    V2 v;
    if constexpr (ACCUMULATE) {
      v = *reinterpret_cast<const V2*>(p);
      v.x += x;
      v.y += y;
    } else {
      v.x = x;
      v.y = y;
    }
    *reinterpret_cast<V2*>(p) = v;
  } else {
    if (col < n) p[0] = ACCUMULATE ? p[0] + x : x;
    if (col + 1 < n) p[1] = ACCUMULATE ? p[1] + y : y;
  }
}

// ---- scalar tile loads (regtile.cu, vectorized.cu) and the register outer product (+ warptile) -

// Element (i, j) of the ROWS x COLS block at (row0, col0) of a rows x cols row-major matrix, zero
// outside it, handed to put(i, j, value): one guarded element per thread and step, consecutive
// threads on consecutive j (coalesced global reads). 64-bit offsets: r * cols exceeds 2^31 on
// large matrices.
template <int ROWS, int COLS, int kThreads, class T, class Put>
__device__ __forceinline__ void load_guarded_tile(const T* __restrict__ src, std::int64_t rows, std::int64_t cols,
                                                  std::int64_t row0, std::int64_t col0, int tid, Put&& put) {
  static_assert(ROWS * COLS % kThreads == 0, "the tile splits evenly over the threads");
#pragma unroll
  for (int it = 0; it < ROWS * COLS / kThreads; ++it) {
    const int e = it * kThreads + tid;
    const int i = e / COLS, j = e % COLS;
    const std::int64_t r = row0 + i, c = col0 + j;
    put(i, j, (r < rows && c < cols) ? src[r * cols + c] : T(0));
  }
}

// A's BM x BK block at (row0, k0), transposed into As (As[p][i] = A(row0 + i, k0 + p)), zeros
// outside A; consecutive threads take consecutive k of a row of A.
template <int BM, int BK, int kThreads, class T, int LD>
__device__ __forceinline__ void load_a_tile_transposed(T (&As)[BK][LD], const T* __restrict__ a, std::int64_t m,
                                                       std::int64_t k, std::int64_t row0, std::int64_t k0, int tid) {
  load_guarded_tile<BM, BK, kThreads>(a, m, k, row0, k0, tid, [&](int i, int p, T v) { As[p][i] = v; });
}

// B's BK x BN block at (k0, col0) into Bs, zeros outside B; consecutive threads take consecutive
// columns of a row of B.
template <int BK, int BN, int kThreads, class T, int LD>
__device__ __forceinline__ void load_b_tile(T (&Bs)[BK][LD], const T* __restrict__ b, std::int64_t k, std::int64_t n,
                                            std::int64_t k0, std::int64_t col0, int tid) {
  load_guarded_tile<BK, BN, kThreads>(b, k, n, k0, col0, tid, [&](int p, int j, T v) { Bs[p][j] = v; });
}

// acc += ar br^T: a thread's TM x TN micro-tile of C from one k step's TM values of A and TN of B.
// Row by row, every other row right to left (a serpentine): consecutive FMAs share an operand
// even where the row changes (the last B value of a row is the first of the next), and ptxas,
// given this order, schedules the FFMAs with more operand reuse and fewer register-bank stalls.
// Measured on the H200 (2026-12-02, warptile 128x256, % of SGEMM at 4096 / 8192 / 16384): 8x16 per
// thread with double-buffered fragments 89.9 / 90.8 / 90.3 in plain row order, 95.4 / 96.7 / 95.5
// in this one; 8x8 per thread (128x128) 88.6 / 90.2 / 87.3 against 92.4 / 93.1 / 89.6.
template <int TM, int TN, class T>
__device__ __forceinline__ void outer_product(T (&acc)[TM][TN], const T (&ar)[TM], const T (&br)[TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int j = i % 2 == 0 ? jj : TN - 1 - jj;
      acc[i][j] = fma(ar[i], br[j], acc[i][j]);
    }
}

// ---- a thread's share of a tile's cp.async copies, checked per k block (tensorcore.cu) ---------

// Where this thread's copies of a BM x BN tile at (row0, col0) start, for every k block: its A rows
// a_row + j * kARowStep at k offset a_k, its B rows from b_row at column b_col; and which of those
// A rows and B columns lie inside A and B (the k bounds are checked per block). Into the caller's
// own variables: kept in a struct, the flags went to local memory (warptile spilled 32 bytes).
template <int kARows, int kARowStep, class T>
__device__ __forceinline__ void tile_copy_origin(bool (&a_row_ok)[kARows], bool& b_col_ok, const T*& a_src,
                                                 const T*& b_src, const T* a, const T* b, std::int64_t m,
                                                 std::int64_t n, std::int64_t k, std::int64_t row0, std::int64_t col0,
                                                 int a_row, int a_k, int b_row, int b_col) {
#pragma unroll
  for (int j = 0; j < kARows; ++j) a_row_ok[j] = row0 + a_row + j * kARowStep < m;
  b_col_ok = col0 + b_col < n;
  a_src = a + (row0 + a_row) * k + a_k;  // 64-bit offsets throughout
  b_src = b + std::int64_t{b_row} * n + col0 + b_col;
}

}  // namespace tessera::kernels
