// The device memory of each kind of product (backend.hpp's device_bytes), as the CUDA backend
// allocates it (cuda_backend.cpp's gemm, cuda_panel_product.cpp, cuda_device_product.cpp). Here,
// outside the CUDA build, so that a dry run for GPUs sizes them anywhere.
#include <algorithm>

#include "backend/backend.hpp"

namespace tessera::backend {

namespace {

// In core: A, B and C; from kPipelineMinBytes on (and rows enough), pipelined: all of B, and two
// tiles of 1 / kPipelineTiles of A's and C's rows. Out of core: within the limit.
std::int64_t gemm_bytes(const DeviceUse& u, std::int64_t es) {
  const std::int64_t a = u.m * u.k * es, b = u.k * u.n * es, c = u.m * u.n * es;
  const std::int64_t tile = (u.m + kPipelineTiles - 1) / kPipelineTiles;
  const std::int64_t pipelined = (u.k * u.n + 2 * tile * (u.k + u.n)) * es;
  const bool pipelines = a + b + c >= static_cast<std::int64_t>(kPipelineMinBytes) && u.m >= 2 * kPipelineTiles;
  const std::int64_t in_core = pipelines ? std::min(a + b + c, pipelined) : a + b + c;
  return u.limit > 0 ? std::min(in_core, u.limit) : in_core;
}

// C, a scratch C where the kernel cannot add into C, and two slots of panels.
std::int64_t panel_product_bytes(const DeviceUse& u, std::int64_t es, bool accumulates) {
  const std::int64_t c = u.m * u.n * es;
  return (accumulates ? 1 : 2) * c + PanelProduct::kSlots * (u.m + u.n) * u.k * es;
}

// K in kKeptChunks chunks from kKeptChunkMinK on, two in flight, summed into C (with a scratch
// C where the kernel cannot add into C); else A, B and C at once.
std::int64_t kept_product_bytes(const DeviceUse& u, std::int64_t es, bool accumulates) {
  const std::int64_t c = u.m * u.n * es;
  if (u.k < kKeptChunkMinK) return (u.m + u.n) * u.k * es + c;
  const std::int64_t chunk = (u.k + kKeptChunks - 1) / kKeptChunks;
  return 2 * (u.m + u.n) * chunk * es + (accumulates ? 1 : 2) * c;
}

}  // namespace

std::int64_t device_bytes(Kind kind, const DeviceUse& use) {
  if (kind == Kind::cpu) return 0;
  const auto es = static_cast<std::int64_t>(dtype_size(use.dtype));
  switch (use.what) {
    case DeviceUse::gemm:
      return gemm_bytes(use, es);
    case DeviceUse::panel_product:
      return panel_product_bytes(use, es, gpu_kernel_accumulates(use.kernel, use.dtype));
    case DeviceUse::kept_product:
      return kept_product_bytes(use, es, gpu_kernel_accumulates(use.kernel, use.dtype));
  }
  return 0;
}

}  // namespace tessera::backend
