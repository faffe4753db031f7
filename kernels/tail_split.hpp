#pragma once
// Two ways of sharing the last, partial wave of tiles over the whole GPU: split the tail's tile
// rows along K in equal parts (plan_tail_split, warptile_staged.cu), or stream-K over the tail
// tiles' k blocks (plan_stream_k, dmma.cu). Pure arithmetic on tile counts, tested without a GPU.
//
// Which tiles of C to split along K so that the last, partial wave of blocks does not leave most
// of the GPU idle (kernels/warptile_staged.cu). A GEMM of T tiles on a GPU that holds P blocks at
// once runs in ceil(T / P) waves, each as long as one tile; 33 x 17 tiles of 128 x 256 on 132 SMs
// are 4.25 waves, so the fifth wave has 33 tiles for 132 SMs and takes as long as a full one. Here
// the tiles are cut in two by tile rows: the first rows, which fill whole waves, run as they are;
// the rest (the tail) run with K split in s, s times as many blocks each with 1/s of the work,
// into partial C's that are summed in a fixed order. Pure arithmetic on tile counts, so it is
// tested without a GPU. Internal to kernels/.
#include <algorithm>
#include <cstdint>

// The stream-K plan's arithmetic runs in the kernels and in the host tests alike.
#if defined(__CUDACC__)
#define TESSERA_HOST_DEVICE __host__ __device__
#else
#define TESSERA_HOST_DEVICE
#endif

namespace tessera::kernels {

// Tile rows [0, main_rows) run unsplit; rows main_rows .. end with K split in `splits` (2 or
// more). splits == 1: nothing is split (main_rows is then every row).
struct TailSplit {
  std::int64_t main_rows = 0;
  int splits = 1;
};

// At most this many partial C's per element (their traffic grows with the count), and at least
// this many k blocks in each split (a split is a pipeline of its own, with its own prologue).
inline constexpr std::int64_t kTailMaxSplits = 8;
inline constexpr std::int64_t kTailMinKBlocksPerSplit = 4;

// The split for tiles_m x tiles_n tiles of k_blocks k blocks each, on a GPU with `slots` blocks
// resident at once (SMs x blocks per SM). The tail is the tile rows after the last one that
// ends inside the whole waves: fewer than slots + tiles_n tiles. It is split in as many pieces as
// fill one wave (slots / tail tiles), within the two limits above; not at all when that is fewer
// than 2, or when the tiles already fill whole waves. With fewer tiles than one wave, every row
// is tail: the whole problem is split (as warptile's -split variants do, with a count of its own).
inline TailSplit plan_tail_split(std::int64_t tiles_m, std::int64_t tiles_n, std::int64_t k_blocks,
                                 std::int64_t slots) {
  const TailSplit none{tiles_m, 1};
  const std::int64_t tiles = tiles_m * tiles_n;
  if (tiles_m < 1 || tiles_n < 1 || slots < 1 || tiles % slots == 0) return none;
  const std::int64_t main_rows = tiles / slots * slots / tiles_n;  // rows ending inside the whole waves
  const std::int64_t tail_tiles = (tiles_m - main_rows) * tiles_n;
  const std::int64_t splits = std::min({kTailMaxSplits, slots / tail_tiles, k_blocks / kTailMinKBlocksPerSplit});
  if (splits < 2) return none;
  return {main_rows, static_cast<int>(splits)};
}

// ---- stream-K over the tail -------------------------------------------------------------------
//
// T tiles of k_blocks k blocks each on P resident blocks: the first T - R tiles (R = T % P, whole
// waves) run one block per tile; the R tail tiles' R * k_blocks k blocks, in order (tile by
// tile), are cut into `sk_blocks` contiguous ranges of (nearly) equal length, one per block, so
// the last wave takes R / sk_blocks of a tile's time instead of a whole one (4096^3 in 128 x 128
// tiles on 132 SMs: 7.76 waves, 8 unsplit). A range is shorter than a tile (sk_blocks > R), so
// it touches at most two tiles: it writes each one's partial sum over its k blocks to a slot of
// its own (slot 0: the first tile it touches, 1: the second), and a second pass adds each tail
// tile's partials in block order (fixed: deterministic, no atomics) onto C.
//
// Iterations are numbered over all tiles: iteration i is k block i % k_blocks of tile
// i / k_blocks; the tail's start at tail_begin() = (T - R) k_blocks.
struct StreamKPlan {
  std::int64_t tiles = 0, k_blocks = 0;
  std::int64_t dp_tiles = 0;   // tiles [0, dp_tiles): one block each, whole
  std::int64_t sk_blocks = 0;  // blocks sharing the k blocks of tiles [dp_tiles, tiles); 0: none

  TESSERA_HOST_DEVICE std::int64_t tail_begin() const { return dp_tiles * k_blocks; }
  TESSERA_HOST_DEVICE std::int64_t tail_iters() const { return (tiles - dp_tiles) * k_blocks; }
  // Blocks of the launch: the whole tiles', then the stream-K ones.
  TESSERA_HOST_DEVICE std::int64_t work_items() const { return dp_tiles + sk_blocks; }
  // The first iteration of stream-K block j (j = sk_blocks: the tail's end).
  TESSERA_HOST_DEVICE std::int64_t begin(std::int64_t j) const { return tail_begin() + j * tail_iters() / sk_blocks; }
  // The stream-K block whose range holds iteration i (of the tail): the last j with begin(j) <= i.
  TESSERA_HOST_DEVICE std::int64_t block_of(std::int64_t i) const {
    return ((i - tail_begin() + 1) * sk_blocks - 1) / tail_iters();
  }
  // The slot block j writes tile `tile`'s partial to (index 2 j + slot in the partials).
  TESSERA_HOST_DEVICE std::int64_t slot(std::int64_t j, std::int64_t tile) const {
    return 2 * j + (begin(j) / k_blocks == tile ? 0 : 1);
  }
  TESSERA_HOST_DEVICE std::int64_t slots() const { return 2 * sk_blocks; }
};

// At least this many k blocks per stream-K range (each is a pipeline with its own prologue), and
// stream-K only where it saves at least 1/kStreamKMinSaving of a tile's time on the last wave.
inline constexpr std::int64_t kStreamKMinIters = 4;
inline constexpr std::int64_t kStreamKMinSaving = 8;

inline StreamKPlan plan_stream_k(std::int64_t tiles, std::int64_t k_blocks, std::int64_t slots) {
  StreamKPlan plan{tiles, k_blocks, tiles, 0};
  if (tiles < 1 || k_blocks < 1 || slots < 1 || tiles % slots == 0) return plan;
  const std::int64_t tail = tiles % slots;
  const std::int64_t blocks = std::min(slots, tail * k_blocks / kStreamKMinIters);
  // A range's length, tail / blocks of a tile, must leave at least 1/kStreamKMinSaving of it.
  if (blocks <= tail || tail * kStreamKMinSaving > blocks * (kStreamKMinSaving - 1)) return plan;
  plan.dp_tiles = tiles - tail;
  plan.sk_blocks = blocks;
  return plan;
}

}  // namespace tessera::kernels
