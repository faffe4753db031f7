#pragma once
// What the reports' provenance block (report/provenance.hpp) needs from the libraries below the
// report layer: the versions of MPI, HDF5, BLAS, CUDA and NCCL this process runs with, and the
// GPUs each rank sees (with their UUIDs, as nvidia-smi prints them).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/bench.hpp"

namespace tessera::commands {

// {"mpi", "mpi_standard", "hdf5", "blas", "blas_config", "cuda_runtime", "cuda_driver", "nccl"}:
// a version string each, null for what this build or machine lacks.
nlohmann::json library_versions();

// The GPUs this process sees: [{id, name, uuid ("GPU-..."), pci_bus_id}]; empty without CUDA.
nlohmann::json visible_gpus();

// The provenance of a command (report::set_provenance takes it): `argv` as given, `options` (the
// options given, on the command line or in the config file), the libraries, the Slurm job id,
// this host, and with `list_gpus` the GPUs this process sees ("devices", for a command that runs
// on them alone: bench). A job's report names each busy rank's GPU from its backend instead
// (report.cpp): listing GPUs starts the driver, ~0.1 s that a rank left idle should not spend.
nlohmann::json collect_provenance(const std::vector<std::string>& argv, const nlohmann::json& options, bool list_gpus);

// `bench`'s options typed, by option name (report::set_typed_options takes it).
nlohmann::json typed_options(const BenchOptions& o);

}  // namespace tessera::commands
