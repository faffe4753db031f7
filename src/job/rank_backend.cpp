#include "job/rank_backend.hpp"

namespace tessera::job {

std::unique_ptr<backend::Backend> make_rank_backend(std::optional<backend::Kind> kind, const backend::Placement& where,
                                                    const std::string& kernel, DType dtype, report::RankRecord& me,
                                                    std::unique_ptr<backend::Backend> kept) {
  const bool reuse = kept != nullptr && (!kind || kept->kind() == *kind);
  auto be = reuse ? std::move(kept) : backend::make_backend(kind, where);
  // `kernel` was resolved and checked once, as the run was settled (algorithms/setting.cpp).
  be->prepare(kernel, dtype);  // e.g. cuBLAS loading and warming up beside the reads
  me.device = be->device();
  me.device_id = be->device_id();
  const backend::DeviceIdentity id = be->device_identity();
  me.device_uuid = id.uuid;
  me.device_pci_bus_id = id.pci_bus_id;
  me.warnings = be->warnings();
  return be;
}

}  // namespace tessera::job
