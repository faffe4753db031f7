#pragma once
// The exchanges the algorithms need, one interface for every path (comm/path.hpp):
//  - GridBroadcast: summa's panels, A's along a grid row and B's down a grid column;
//  - SumToRoot: ksplit's elementwise sum of every rank's partial C onto rank 0 (C gathered);
//  - SumScatter: ksplit's sum of a band of C, each rank keeping its own rows (C written in place);
//  - BlockLink: point-to-point of C blocks (summa's gather to rank 0).
// A Transport makes them for one path (host MPI, CUDA-aware MPI, NCCL); make_transport picks it
// once per job. The comm layer knows no backend: what it needs of the device (where a panel goes,
// a stream that orders a transfer after the compute) the algorithm hands it through PanelSlot and
// ReduceData, over its backend's own objects.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm/comm.hpp"
#include "comm/path.hpp"
#include "core/dtype.hpp"

namespace tessera::comm {

// Device-side communication (an NCCL call) enqueued on `stream`, an opaque cudaStream_t: the
// backend runs it on the stream that orders it after its own work on the same memory.
using StreamWork = std::function<void(void* stream)>;

// MPI counts are int: `v` as an int, or InputError "<what> of <v> exceeds MPI's int counts ...".
int mpi_count(std::int64_t v, const std::string& what);

// MPI_Reduce's pieces (ksplit on host MPI): MPI counts are int, and the temporary buffers MPI
// takes on the combining ranks stay this small (the dry run counts one piece per rank).
inline constexpr std::size_t kReducePieceBytes = std::size_t{64} << 20;

// ---- summa's panels ---------------------------------------------------------------------------

// Where one panel of summa's current slot lands on this rank, and how an exchange orders itself
// with the backend's copies and multiplies there (the algorithm implements it over its backend).
class PanelSlot {
 public:
  virtual ~PanelSlot() = default;
  // The panel's place in device memory (host memory on the CPU backend).
  virtual void* device() = 0;
  // Host path, non-roots: page-locked host memory to receive into; then upload().
  virtual void* host_staging() = 0;
  // Enqueues the copy of host_staging() to device().
  virtual void upload() = 0;
  // Blocks until what the root staged into device() has arrived (before MPI reads it there).
  virtual void wait_staged() = 0;
  // Enqueues device-side work on the slot (NCCL), after its last multiply and what was staged
  // into it, before its next multiply.
  virtual void enqueue(const StreamWork& work) = 0;
};

// One panel's broadcast along a line of the process grid: rows x cols elements from the line's
// member `root`, which holds its piece in host memory at `own` (row stride `own_ld` elements) and
// has staged it into its slot's device memory.
struct LinePanel {
  PanelSlot& slot;
  int root = 0;
  std::int64_t rows = 0, cols = 0;
  const void* own = nullptr;  // on the root
  std::int64_t own_ld = 0;
  std::int64_t elements() const { return rows * cols; }
};

class GridBroadcast {
 public:
  virtual ~GridBroadcast() = default;
  // Whether panels arrive through PanelSlot::host_staging (the backend then page-locks staging).
  virtual bool stages_on_host() const = 0;
  // A's panel along this rank's grid row and B's down its grid column, in flight together. On
  // return they are in their slot, or enqueued to get there before its next multiply. Not agreed
  // on by the ranks (they wait inside the broadcasts): a failure throws, and main() ends the job.
  virtual void broadcast(const LinePanel& a, const LinePanel& b) = 0;
};

// ---- ksplit's sum ------------------------------------------------------------------------------

// A rank's partial product for SumToRoot: in host memory, or where the backend keeps it on the
// device (the algorithm implements it over its backend).
class ReduceData {
 public:
  virtual ~ReduceData() = default;
  virtual void* host() = 0;
  virtual void* device() = 0;
  // Enqueues device-side work on the partial (NCCL), after the product that wrote it.
  virtual void enqueue(const StreamWork& work) = 0;
};

class SumToRoot {
 public:
  virtual ~SumToRoot() = default;
  // Whether it sums device memory (the algorithm keeps its partial product on the device).
  virtual bool on_device() const = 0;
  // Collective: the elementwise sum of every rank's `count` elements, in place on `root` (other
  // ranks' data are left as they were, or enqueued to be summed: wait on the backend).
  virtual void sum(ReduceData& data, std::size_t count, int root) = 0;
};

// ksplit's band of C summed over the ranks, each keeping its own piece: a reduce-scatter.
class SumScatter {
 public:
  virtual ~SumScatter() = default;
  // Whether it sums device memory (the algorithm keeps its partial product on the device).
  virtual bool on_device() const = 0;
  // Collective: the elementwise sum of every rank's size() x `piece` elements; rank r keeps
  // elements [r * piece, (r + 1) * piece) of the sum: in `into` (host memory) on the host path,
  // in place at that offset of data.device() on the device path (enqueued: wait on the backend).
  // MPI counts are int: a piece of more than INT_MAX elements is refused (InputError).
  virtual void sum_scatter(ReduceData& data, std::size_t piece, void* into) = 0;
};

// ---- C blocks -----------------------------------------------------------------------------------

// A C block of `elements`: in host memory and, on a GPU, on the device.
struct Block {
  void* host = nullptr;
  void* device = nullptr;
  std::int64_t elements = 0;
};

class BlockLink {
 public:
  virtual ~BlockLink() = default;
  // Sends this rank's block to member `to`.
  virtual void send(const Block& mine, int to) = 0;
  // Receives member `from`'s block of `elements` into host memory `into`; a device path receives
  // it into `staging` (device memory at least that large) first and copies it down.
  virtual void receive(int from, void* into, std::int64_t elements, const Block& staging) = 0;
};

// ---- the path ----------------------------------------------------------------------------------

// The GPU a rank's backend computes on, and a stream of it (opaque cudaStream_t) for the
// transport's own device work (setting NCCL up, the blocks); id -1 on the CPU.
struct Device {
  int id = -1;
  void* stream = nullptr;
};

// One path's exchanges. Each maker is collective over `world` (every rank calls it, in the same
// order): a failure every rank can agree on throws the same JobError everywhere; a rank that fails
// while its peers wait inside NCCL's set-up ends the job (abort_job).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Path path() const = 0;
  // summa: `row` and `col` are this rank's grid row and column (nullptr on ranks outside the grid).
  virtual std::unique_ptr<GridBroadcast> grid_broadcast(const Comm& world, const Comm* row, const Comm* col) = 0;
  // Point-to-point between the `members` (nullptr on ranks that are not).
  virtual std::unique_ptr<BlockLink> block_link(const Comm& world, const Comm* members) = 0;
  // ksplit: the sum over all of `world`, onto rank 0 or scattered over the ranks. NCCL's group is
  // joined in the background until the first sum: made before the inputs are read, its set-up
  // overlaps the reading.
  virtual std::unique_ptr<SumToRoot> sum_to_root(const Comm& world) = 0;
  virtual std::unique_ptr<SumScatter> sum_scatter(const Comm& world) = 0;
};

// The transport of `path` for elements of `dtype` on `device`. Throws Error for nccl in a build
// without it.
std::unique_ptr<Transport> make_transport(Path path, DType dtype, const Device& device);

}  // namespace tessera::comm
