#pragma once
// Open MPI's transports, chosen before MPI_Init. Left to itself, Open MPI opens and probes every
// network transport it was built with (UCX, libfabric, PSM, PSM2, ...) at MPI_Init even when all
// ranks share one node, where only shared memory is ever used: on the 2-GPU H200 machine and the
// development machine that probing was most of a bare MPI_Init (docs/performance.md). Where every
// rank of the job is known to be on one node, and nothing in the environment or the user's
// ~/.openmpi/mca-params.conf chose the transports already, tessera asks for the point-to-point
// layer ob1 over shared memory (`pml=ob1`, `btl=self,vader`), through Open MPI's own environment
// variables. A CUDA-aware Open MPI keeps its own transports (they carry GPU memory, where vader
// does not). A process started without a launcher (`tessera run` alone) is, by Open MPI's
// default, a "singleton" that starts a server process (orted) at MPI_Init; tessera never connects
// to other jobs, so it asks for an isolated singleton instead (`ess_singleton_isolated`): a bare
// MPI_Init then took 0.03 s against 0.37 s on the development machine. TESSERA_MPI_TRANSPORTS=
// open-mpi leaves both to Open MPI's configuration.
#include <string>

namespace tessera::comm {

// What a decision rests on: the environment as a function (name -> value or nullptr) and the
// user's MCA parameter file's text ("" when there is none). Pure, for tests.
struct LaunchView {
  const char* (*get)(const char*) = nullptr;
  std::string user_mca_params;
  bool cuda_aware_build = false;  // Open MPI built CUDA-aware (MPIX_CUDA_AWARE_SUPPORT): its transports are kept
};

struct TransportChoice {
  bool shared_memory_only = false;  // set pml=ob1, btl=self,vader
  bool isolated_singleton = false;  // no launcher: set ess_singleton_isolated
  std::string why;                  // one line, for the log and `tessera info`
  std::string error;                // TESSERA_MPI_TRANSPORTS has a value other than auto/open-mpi
};

TransportChoice choose_transports(const LaunchView& view);

// Called first thing in main(), before MPI_Init: decides from the real environment and sets the
// variables where the choice says so. Remembered for transport_note().
void prepare_mpi_start();

// This process's rank among the ranks of its node as the launcher tells it before MPI_Init
// (Open MPI's mpirun, Slurm's srun, MPICH's Hydra); 0 when none says (one process).
int launcher_local_rank();

// How many ranks of this job share this node, as the launcher tells it before MPI_Init; 1 for one
// process without a launcher, 0 when the launcher does not say.
int launcher_local_size();

// prepare_mpi_start()'s decision: its `why`, and `error` ("" when none).
const TransportChoice& mpi_start_choice();

}  // namespace tessera::comm
