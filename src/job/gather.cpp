#include "job/gather.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/chunked_write.hpp"
#include "io/nonfinite.hpp"

namespace tessera::job {

namespace {
constexpr int kRoot = 0;
constexpr int kTagBlock = 101;
constexpr int kTagChunks = 102;

// What a rank sends rank 0 ahead of its compressed chunks (kTagChunks): the chunks' message size,
// whether its block follows (kTagBlock), and, where it does not, the block's NaN and Inf.
struct ChunksHeader {
  std::uint64_t bytes = 0;
  std::uint64_t block_follows = 1;
  double nonfinite = 0, first = 0;
};

// Rank `rank`'s compressed chunks (those wholly inside its block, compressed by its threads): the
// message and its header. Where they tile the block, the block itself need not travel: its NaN and
// Inf are counted here instead. An empty list where compressing fails (rank 0 then compresses
// them from the block: the bytes are the same).
std::vector<unsigned char> compressed_inside(const io::ChunkLayout& layout, const partition::Partition& part, int rank,
                                             const void* c_block, DType dtype, ChunksHeader& header) {
  const auto rows = part.rows_of(rank), cols = part.cols_of(rank);
  try {
    const std::vector<io::CompressedChunk> chunks = io::ChunkedWriter(layout).compress_inside(
        rows.begin, cols.begin, rows.size(), cols.size(), c_block, io::io_threads());
    const std::int64_t tiles = io::chunks_tiling(layout, rows.begin, cols.begin, rows.size(), cols.size());
    header.block_follows = !(tiles > 0 && static_cast<std::size_t>(tiles) == chunks.size());
    if (!header.block_follows) {
      const io::NonfiniteCount seen =
          io::count_nonfinite(c_block, dtype, rows.size(), cols.size(), rows.begin, cols.begin, layout.cols);
      header.nonfinite = seen.count;
      header.first = seen.first;
    }
    std::vector<unsigned char> message = io::pack(chunks);
    header.bytes = message.size();
    return message;
  } catch (const std::exception&) {  // (out of memory): no chunks, the block follows; rank 0 is never left waiting
    header = ChunksHeader{};
    std::vector<unsigned char> none = io::pack({});
    header.bytes = none.size();
    return none;
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
      ChunksHeader header;
      if (chunks) {  // the chunks first; the block after them only where they do not tile it
        const std::vector<unsigned char> ready = compressed_inside(*chunks, part, rank, c_block, dtype, header);
        comm.send_bytes(&header, sizeof header, kRoot, kTagChunks);
        comm.send_bytes(ready.data(), ready.size(), kRoot, kTagChunks);
      }
      if (transport.send)
        transport.send();
      else if (header.block_follows)
        comm.send_bytes(c_block, static_cast<std::size_t>(part.c_elements(rank)) * esize, kRoot, kTagBlock);
      phases.emplace_back("gather", MPI_Wtime() - t);
      return;
    }
    const int blocks = part.grid().size();
    std::optional<std::string> write_error;
    double write_s = 0, receive_s = 0;
    // Block r's chunks that its rank compressed (with `chunks`); where they tile the block, its NaN
    // and Inf as that rank counted them and no block (else the block, in the buffer it arrived in).
    std::vector<io::CompressedChunk> ready[2];
    std::optional<io::NonfiniteCount> tiled[2];
    const auto receive = [&](int r, void* into) {
      const double t0 = MPI_Wtime();
      const std::size_t bytes = static_cast<std::size_t>(part.c_elements(r)) * esize;
      ChunksHeader header;
      if (chunks) {
        comm.await_message(r, kTagChunks);  // rank r compresses first: its core, not a spin here
        comm.recv_bytes(&header, sizeof header, r, kTagChunks);
        std::vector<unsigned char> message(static_cast<std::size_t>(header.bytes));
        comm.recv_bytes(message.data(), message.size(), r, kTagChunks);
        ready[r % 2] = io::unpack(message);
        tiled[r % 2].reset();
        if (!header.block_follows) tiled[r % 2] = io::NonfiniteCount{header.nonfinite, header.first};
      }
      if (transport.receive)
        transport.receive(r, into, bytes);
      else if (header.block_follows)
        comm.recv_bytes(into, bytes, r, kTagBlock);
      receive_s += MPI_Wtime() - t0;
    };
    // Only this function's one writer thread at a time calls HDF5.
    const auto write = [&](int r, const void* data) {  // runs on a second thread: no MPI here
      if (write_error || (r == kRoot && root_written)) return;
      const auto rows = part.rows_of(r), cols = part.cols_of(r);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        if (r != kRoot && tiled[r % 2]) {
          log::debug(fmt::format("C: block {} stored as its rank's {} compressed chunks (the block stayed there)", r,
                                 ready[r % 2].size()));
          writer->write_chunks(rows.begin, cols.begin, rows.size(), cols.size(), ready[r % 2], *tiled[r % 2]);
        } else {
          writer->write_block(rows.begin, cols.begin, rows.size(), cols.size(), data, ready[r % 2]);
        }
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
