#include "comm/exchange.hpp"

#include <climits>

#include "comm/transports.hpp"
#include "core/error.hpp"

namespace tessera::comm {

int mpi_count(std::int64_t v, const std::string& what) {
  if (v > INT_MAX)
    throw InputError(what + " of " + std::to_string(v) +
                     " exceeds MPI's int counts; use more ranks or --algorithm panels");
  return static_cast<int>(v);
}

std::unique_ptr<Transport> make_transport(Path path, DType dtype, const Device& device) {
  switch (path) {
    case Path::host:
      return make_host_transport(dtype);
    case Path::cuda_aware:
      return make_cuda_aware_transport(dtype);
    case Path::nccl:
      return make_nccl_transport(dtype, device);
  }
  throw Error("unknown communication path");
}

}  // namespace tessera::comm
