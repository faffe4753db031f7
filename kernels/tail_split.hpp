#pragma once
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

}  // namespace tessera::kernels
