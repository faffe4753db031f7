#pragma once
// `tessera info`: version, build features, MPI, HDF5, BLAS, GPUs, and what Slurm set.
#include <nlohmann/json.hpp>

#include "comm/comm.hpp"

namespace tessera::commands {

nlohmann::json collect_info(const comm::Comm& comm);
// Every kernel of this build (backend::kernel_catalog): backend, name, dtypes, opt_in, vendor,
// needs (sm_90a, cuBLAS), summary. `info`'s "kernels".
nlohmann::json kernels_json();
std::string format_info(const nlohmann::json& info);

}  // namespace tessera::commands
