#include "job/gather.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace tessera::job {

namespace {
constexpr int kRoot = 0;
constexpr int kTagBlock = 101;
constexpr int kTagChunks = 102;

// The chunks wholly inside this rank's block, compressed by its threads, as one message; an empty
// list where that fails (rank 0 then compresses them: the bytes are the same).
std::vector<unsigned char> compressed_inside(const io::ChunkLayout& layout, const partition::Partition& part, int rank,
                                             const void* c_block) {
  try {
    const auto rows = part.rows_of(rank), cols = part.cols_of(rank);
    return io::pack(io::ChunkedWriter(layout).compress_inside(rows.begin, cols.begin, rows.size(), cols.size(), c_block,
                                                              io::io_threads()));
  } catch (const std::exception&) {
    return io::pack({});
  }
}
}  // namespace

void gather_and_write(const comm::Comm& comm, const partition::Partition& part, DType dtype, void* c_block, void* spare,
                      io::BlockSink* writer, const std::function<void(const std::string&)>& progress,
                      report::Phases& phases, const BlockTransport& transport, bool root_written,
                      const io::ChunkLayout* chunks) {
  const int rank = comm.rank();
  const std::size_t esize = dtype_size(dtype);
  comm.step([&] {
    const double t = MPI_Wtime();
    if (rank != kRoot) {
      if (!part.active(rank)) return;
      std::vector<unsigned char> ready;
      if (chunks) ready = compressed_inside(*chunks, part, rank, c_block);
      if (transport.send)
        transport.send();
      else
        comm.send_bytes(c_block, static_cast<std::size_t>(part.c_elements(rank)) * esize, kRoot, kTagBlock);
      if (chunks) {
        const std::uint64_t size = ready.size();
        comm.send_bytes(&size, sizeof size, kRoot, kTagChunks);
        comm.send_bytes(ready.data(), ready.size(), kRoot, kTagChunks);
      }
      phases.emplace_back("gather", MPI_Wtime() - t);
      return;
    }
    const int blocks = part.grid().size();
    std::optional<std::string> write_error;
    double write_s = 0, receive_s = 0;
    // Block r's chunks that its rank compressed (with `chunks`), beside the buffer it arrived in.
    std::vector<io::CompressedChunk> ready[2];
    const auto receive = [&](int r, void* into) {
      const double t0 = MPI_Wtime();
      const std::size_t bytes = static_cast<std::size_t>(part.c_elements(r)) * esize;
      if (chunks) comm.await_message(r, kTagBlock);  // rank r compresses first: its core, not a spin here
      if (transport.receive)
        transport.receive(r, into, bytes);
      else
        comm.recv_bytes(into, bytes, r, kTagBlock);
      if (chunks) {
        std::uint64_t size = 0;
        comm.recv_bytes(&size, sizeof size, r, kTagChunks);
        std::vector<unsigned char> message(static_cast<std::size_t>(size));
        comm.recv_bytes(message.data(), message.size(), r, kTagChunks);
        ready[r % 2] = io::unpack(message);
      }
      receive_s += MPI_Wtime() - t0;
    };
    // Only this function's one writer thread at a time calls HDF5.
    const auto write = [&](int r, const void* data) {  // runs on a second thread: no MPI here
      if (write_error || (r == kRoot && root_written)) return;
      const auto rows = part.rows_of(r), cols = part.cols_of(r);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        writer->write_block(rows.begin, cols.begin, rows.size(), cols.size(), data, ready[r % 2]);
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
