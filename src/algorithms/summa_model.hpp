#pragma once
// summa's cost model (internal to algorithms/; summa.cpp is the algorithm): the panel width, the
// footprint and predicted time of a rank, and the bands a C block is computed in.
#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace tessera::algorithms::summa_model {

// Panel width when --panel-width is 0: wide enough that a panel's multiply dwarfs its launch
// and transfer latency, narrow enough that two slots stay small next to the C block.
constexpr std::int64_t kWidthGpu = 1024;
constexpr std::int64_t kWidthCpu = 256;
// C blocks from this size on are computed in bands, each written while the next computes.
constexpr std::int64_t kBandMinBytes = std::int64_t{256} << 20;
constexpr int kMostBands = 16;
// The panel width for --panel-width `asked` (0: the default). MPI moves a panel as one item of at
// most INT_MAX elements (and bytes), so on the MPI paths it is narrowed to fit the largest block
// (block (0, 0): split() puts the longer ranges first).
std::int64_t panel_width(const Problem& p, const Setting& s, std::int64_t asked);

// What rank `rank` holds, moves and takes with the C block in `bands` row bands.
RankFootprint cost(const Problem& p, const Setting& s, const MachineModel& m, int rank, int bands);

// Bands for a job: C in place and block (0, 0) at least kBandMinBytes, then the count with the
// shortest predicted run of block (0, 0); never more than the rows of the smallest block (a count
// `asked`, TESSERA_BANDS, is only held to that).
int choose_bands(const Problem& p, const Setting& s, const MachineModel& m, int asked);

}  // namespace tessera::algorithms::summa_model
