#pragma once
// What the reports' provenance block (report/provenance.hpp) needs from the libraries below the
// report layer: the versions of MPI, HDF5, BLAS, CUDA and NCCL this process runs with, and the
// GPUs each rank sees (with their UUIDs, as nvidia-smi prints them).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/comm.hpp"

namespace tessera::commands {

// {"mpi", "mpi_standard", "hdf5", "blas", "blas_config", "cuda_runtime", "cuda_driver", "nccl"}:
// a version string each, null for what this build or machine lacks.
nlohmann::json library_versions();

// The GPUs this process sees: [{id, name, uuid ("GPU-..."), pci_bus_id}]; empty without CUDA.
nlohmann::json visible_gpus();

// The provenance of a command (report::set_provenance takes it): `argv` as given, `options` (the
// options given, on the command line or in the config file), the libraries, the Slurm job id,
// and, when `gather` (collective over `comm`), every rank's host and GPUs ("devices"; complete
// on rank 0); without it, this process's.
nlohmann::json collect_provenance(const comm::Comm& comm, const std::vector<std::string>& argv,
                                  const nlohmann::json& options, bool gather);

}  // namespace tessera::commands
