#pragma once
// The transports of each path (exchange.hpp's make_transport chooses among them). Internal to
// the comm layer.
#include <memory>

#include "comm/exchange.hpp"

namespace tessera::comm {

std::unique_ptr<Transport> make_host_transport(DType dtype);                        // mpi_transport.cpp
std::unique_ptr<Transport> make_cuda_aware_transport(DType dtype);                  // mpi_transport.cpp
std::unique_ptr<Transport> make_nccl_transport(DType dtype, const Device& device);  // nccl_transport.cpp

}  // namespace tessera::comm
