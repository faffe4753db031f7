#pragma once
// Entry points of the CUDA backend (compiled only when TESSERA_HAVE_CUDA).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace tessera::backend {

// One GPU per rank, chosen from the node-local rank among the GPUs this process can see
// (CUDA_VISIBLE_DEVICES / Slurm's binding are honoured by the CUDA runtime itself).
// Throws DeviceError when no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend(const Placement& where);

// backend.hpp's resolve_kernel for "auto": the choice for an m x n x k GEMM on visible GPU 0.
std::string cuda_resolve_kernel(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, LoadHorizon horizon);

// backend.hpp's gpu_kernel_accumulates, for this backend's kernels and defaults.
bool cuda_kernel_accumulates(const std::string& kernel, DType dtype);

// backend.hpp's kernel_catalog for the GPU: the registry's kernels (kernels/gpu_gemm.hpp), no device touched.
std::vector<KernelInfo> cuda_kernel_catalog();

// Visible GPUs; 0 when none (or the driver cannot be reached). Never throws.
int cuda_device_count();
// backend.hpp's current_gpu and copy_device_to_host (cuda_device.cpp).
int cuda_current_device();
void cuda_copy_to_host(void* host, const void* device, std::size_t bytes);

// backend.hpp's gpu_identity: visible GPU `device`'s UUID and PCI bus id. Never throws.
DeviceIdentity cuda_device_identity(int device);

// "0: NVIDIA H200 (sm_90, 139.8 GiB)" ... one line per visible GPU. Never throws.
std::vector<std::string> cuda_describe_devices();

// backend.hpp's start_gpu_early, on the calling thread: the driver, then the primary context of
// GPU local_rank % count. Never throws; leaves no error behind.
void cuda_start_device(int local_rank);

}  // namespace tessera::backend
