#pragma once
// C blocks gathered to rank 0, which writes them (--write gather, or ranks that do not share the
// output's file system: job/output.hpp).
#include <cstddef>
#include <cstdint>
#include <functional>

#include "algorithms/algorithm.hpp"
#include "comm/comm.hpp"
#include "core/dtype.hpp"
#include "io/direct_io.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"

namespace tessera::job {

// Collective: each active rank's C block (laid out by `part`) goes to rank 0, which writes it.
// Rank 0's own block is written from `c_block` (unless `root_written`: it is in the output already); with a `spare`
// buffer (rank 0 only, of partition::gather_spare_elements() elements) the blocks alternate between the two, and each
// is written on a second thread while the next one arrives; without one they arrive, one after the other, into
// `c_block` (block (0, 0) is the largest: split() makes the first ranges the longer ones). Rank 0 keeps receiving after
// a write error so no sender is left blocked; the error is then agreed on by every rank (JobError). Appends "gather"
// (receiving) and, on rank 0, "write" phases to `phases`; with a spare buffer the two overlap. The blocks travel by
// host MPI unless `send` (senders) and `receive` (rank 0: rank r's block of `bytes` into `into`) say otherwise, e.g.
// GPU to GPU. `progress` hears of each block rank 0 writes.
// With `chunks` (C compressed chunk by chunk, its layout on every rank; host MPI only), each rank
// but 0 first compresses the chunks wholly inside its block with its own threads and sends them,
// then its block only where they do not tile it (chunks straddle blocks): rank 0 stores them as
// they are and compresses only its own block's and the straddling chunks. A block that does not
// travel has its NaN and Inf counted by its rank. A rank whose compression fails sends an empty
// list of chunks, then its block (rank 0 compresses them).
using BlockTransport = algorithms::COut::Transport;
void gather_and_write(const comm::Comm& comm, const partition::Partition& part, DType dtype, void* c_block, void* spare,
                      io::BlockSink* writer, const std::function<void(const std::string&)>& progress,
                      report::Phases& phases, const BlockTransport& transport = {}, bool root_written = false,
                      const io::ChunkLayout* chunks = nullptr);

}  // namespace tessera::job
