#pragma once
// A rank's backend and kernel.
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "core/dtype.hpp"
#include "report/report.hpp"

namespace tessera::job {

// The rank's backend (`backend_name`, placed by `where`) and the kernel `kernel_name` stands for:
// "auto" is the backend's choice for an m x n x k GEMM. Fills me.device, me.device_id, the GPU's
// UUID and PCI bus id, and me.warnings. Throws InputError for a kernel the backend does not have (listing those it
// has). Not collective: call it inside a Comm::step.
std::unique_ptr<backend::Backend> make_rank_backend(const std::string& backend_name, const backend::Placement& where,
                                                    const std::string& kernel_name, DType dtype, std::int64_t m,
                                                    std::int64_t n, std::int64_t k, report::RankRecord& me,
                                                    std::string& kernel);

}  // namespace tessera::job
