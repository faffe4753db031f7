#pragma once
// `tessera info`: version, build features, MPI, HDF5, BLAS, GPUs, and what Slurm set.
#include <nlohmann/json.hpp>

#include "comm/comm.hpp"

namespace tessera::commands {

nlohmann::json collect_info(const comm::Comm& comm);
std::string format_info(const nlohmann::json& info);

}  // namespace tessera::commands
