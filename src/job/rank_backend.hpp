#pragma once
// A rank's backend.
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.hpp"
#include "report/report.hpp"

namespace tessera::job {

// The rank's backend (of `kind`, nullopt: auto; placed by `where`), prepared for `kernel`, the
// resolved name the run was settled with (checked there, once; the backend refuses any other at
// its first GEMM). Fills me.device, me.device_id, the GPU's UUID and PCI bus id, and me.warnings.
// Not collective: call it inside a Comm::step. `kept`: the backend of this rank's product
// before in the same launch (job/launch.hpp), taken again where it is of the kind asked: its device,
// context and libraries are up already.
std::unique_ptr<backend::Backend> make_rank_backend(std::optional<backend::Kind> kind, const backend::Placement& where,
                                                    const std::string& kernel, DType dtype, report::RankRecord& me,
                                                    std::unique_ptr<backend::Backend> kept = nullptr);

}  // namespace tessera::job
