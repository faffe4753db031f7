// The CUDA backend's in-core GEMM (cuda_gemm.hpp): A and B up, the chosen kernel from the registry
// (kernels/gpu_gemm.hpp), C down, each phase timed with CUDA events.
#include "backend/cuda_gemm.hpp"

#include <cuda_runtime_api.h>

#include "backend/step_times.hpp"
#include "kernels/cuda_check.hpp"

namespace tessera::backend {

std::vector<PhaseTime> gemm_in_core(Gpu& gpu, const std::string& kernel, const GemmProblem& p) {
  const std::size_t elem = dtype_size(p.dtype);
  const std::size_t a_bytes = static_cast<std::size_t>(p.m * p.k) * elem;
  const std::size_t b_bytes = static_cast<std::size_t>(p.k * p.n) * elem;
  const std::size_t c_bytes = static_cast<std::size_t>(p.m * p.n) * elem;
  const std::string of_gemm = " of a " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
                              " " + dtype_name(p.dtype) + " GEMM that needs " +
                              kernels::format_bytes(static_cast<double>(a_bytes + b_bytes + c_bytes)) + " on the GPU";
  const kernels::DeviceBuffer a(a_bytes, "A (" + shape_str(p.m, p.k) + ")" + of_gemm);
  const kernels::DeviceBuffer b(b_bytes, "B (" + shape_str(p.k, p.n) + ")" + of_gemm);
  const kernels::DeviceBuffer c(c_bytes, "C (" + shape_str(p.m, p.n) + ")" + of_gemm);
  const cudaStream_t s = gpu.stream.get();
  const kernels::GpuGemm g{p.dtype, p.m, p.n, p.k, a.get(), b.get(), c.get(), s};

  // Page-lock large host buffers so the copies run at full bus speed. Registering costs host
  // time too, so it is counted in the phase it serves (A, B in h2d; C in d2h).
  kernels::HostRegistration pin_a, pin_b, pin_c;
  const double pin_in_seconds = host_seconds([&] {
    pin_a = kernels::HostRegistration(p.a, a_bytes, pin_min_bytes());
    pin_b = kernels::HostRegistration(p.b, b_bytes, pin_min_bytes());
  });
  const double pin_out_seconds = host_seconds([&] { pin_c = kernels::HostRegistration(p.c, c_bytes, pin_min_bytes()); });

  if (p.a_rows) p.a_rows->wait_for(p.m);
  kernels::Event start, copied_in, computed, copied_out;
  start.record(s);
  if (a_bytes) CUDA_CHECK(cudaMemcpyAsync(a.get(), p.a, a_bytes, cudaMemcpyHostToDevice, s));
  if (b_bytes) CUDA_CHECK(cudaMemcpyAsync(b.get(), p.b, b_bytes, cudaMemcpyHostToDevice, s));
  copied_in.record(s);
  kernels::gpu_gemm(kernel, g, gpu.context);
  computed.record(s);
  CUDA_CHECK(cudaMemcpyAsync(p.c, c.get(), c_bytes, cudaMemcpyDeviceToHost, s));
  copied_out.record(s);
  gpu.stream.synchronize();
  if (p.c_rows) p.c_rows->publish(p.m);
  gpu.note_peak();

  return {{"h2d", pin_in_seconds + copied_in.seconds_since(start)},
          {"kernel", computed.seconds_since(copied_in)},
          {"d2h", pin_out_seconds + copied_out.seconds_since(computed)}};
}

}  // namespace tessera::backend
