#include "job/gather.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace tessera::job {

namespace {
constexpr int kRoot = 0;
constexpr int kTagBlock = 101;
}  // namespace

void gather_and_write(const comm::Comm& comm, const partition::Partition& part, DType dtype, void* c_block, void* spare,
                      io::BlockSink* writer, const std::function<void(const std::string&)>& progress,
                      report::Phases& phases, const BlockTransport& transport, bool root_written) {
  const int rank = comm.rank();
  const std::size_t esize = dtype_size(dtype);
  comm.step([&] {
    const double t = MPI_Wtime();
    if (rank != kRoot) {
      if (!part.active(rank)) return;
      if (transport.send)
        transport.send();
      else
        comm.send_bytes(c_block, static_cast<std::size_t>(part.c_elements(rank)) * esize, kRoot, kTagBlock);
      phases.emplace_back("gather", MPI_Wtime() - t);
      return;
    }
    const int blocks = part.grid().size();
    std::optional<std::string> write_error;
    double write_s = 0, receive_s = 0;
    const auto receive = [&](int r, void* into) {
      const double t0 = MPI_Wtime();
      const std::size_t bytes = static_cast<std::size_t>(part.c_elements(r)) * esize;
      if (transport.receive)
        transport.receive(r, into, bytes);
      else
        comm.recv_bytes(into, bytes, r, kTagBlock);
      receive_s += MPI_Wtime() - t0;
    };
    // Only this function's one writer thread at a time calls HDF5.
    const auto write = [&](int r, const void* data) {  // runs on a second thread: no MPI here
      if (write_error || (r == kRoot && root_written)) return;
      const auto rows = part.rows_of(r), cols = part.cols_of(r);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        writer->write_block(rows.begin, cols.begin, rows.size(), cols.size(), data);
      } catch (const std::exception& e) {
        write_error = e.what();
      }
      write_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    void* const buffers[2] = {c_block, spare};
    for (int r = 0; r < blocks; ++r) {
      progress("writing C: block " + std::to_string(r + 1) + " of " + std::to_string(blocks));
      if (!spare) {  // one buffer: receive, then write
        if (r != kRoot) receive(r, c_block);
        write(r, c_block);
        continue;
      }
      // Two buffers: block r (already here) is written on a thread while block r + 1 arrives.
      void* const here = buffers[r % 2];
      if (r + 1 < blocks) {
        std::thread writing([&write, r, here] { write(r, here); });
        try {
          receive(r + 1, buffers[(r + 1) % 2]);
        } catch (...) {
          writing.join();
          throw;
        }
        writing.join();
      } else {
        write(r, here);
      }
    }
    phases.emplace_back("gather", receive_s);
    phases.emplace_back("write", write_s);
    if (write_error) throw IoError(*write_error);
  });
}

}  // namespace tessera::job
