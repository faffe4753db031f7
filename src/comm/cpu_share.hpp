#pragma once
// Each rank's share of its node's cores. Open MPI binds every rank to one core when a job has
// two ranks or fewer (`mpirun -np 2` without `--bind-to none`), so OpenBLAS, the threads that read
// and decompress the inputs and those that write C would all run on that one core while the
// node's other cores sit idle. A rank bound to fewer cores than its share (the cores this process
// may use on the node, split evenly between the node's ranks in node-local rank order) is given
// its share; a binding that already gives each rank at least its share (Slurm's --cpus-per-task,
// `--bind-to none`) is kept. TESSERA_KEEP_BINDING=1 keeps the launcher's binding whatever it is.
#include <string>
#include <vector>

#include "comm/comm.hpp"

namespace tessera::comm {

struct CpuShare {
  int before = 0;    // cores this rank was bound to
  int after = 0;     // cores it runs on now
  std::string note;  // what was changed and why ("" when nothing was)
};

// This rank's share of `cpus` (the node's usable cores, ascending) among `ranks` ranks: a
// contiguous slice, the first `cpus % ranks` slices one longer. Pure.
std::vector<int> cpu_slice(const std::vector<int>& cpus, int local_rank, int local_size);

// Collective over `world` (node-local rank and size): widens this rank's CPU affinity to its share
// where it was narrower. Never fails the job: where the affinity cannot be read or set, nothing
// changes.
CpuShare widen_cpu_binding(const Comm& world);

}  // namespace tessera::comm
