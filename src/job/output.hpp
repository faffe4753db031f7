#pragma once
// How C reaches the output file (--write):
//  - in place: every active rank writes its own C block straight into the output's temporary file
//    (pwrite at its offsets, io/direct_io.hpp) and makes it durable; rank 0 then adds the
//    attributes and commits by rename. Nothing of C passes through rank 0 that rank 0 did not
//    compute. Taken when the output is contiguous and every active rank sees the same file
//    (detected: rank 0 writes a random token into it, the others read it back).
//  - gather: the blocks travel to rank 0, which writes them (job/gather.hpp). Taken where the
//    ranks do not share the file (e.g. nodes without a common file system), where HDF5 writes the
//    output itself (TESSERA_HDF5_DIRECT=0), or when asked for (--write gather).
#include <cstdint>
#include <memory>
#include <string>

#include "comm/comm.hpp"
#include "io/hdf5_io.hpp"
#include "report/report.hpp"

namespace tessera::job {

class OutputRoute {
 public:
  // Collective. `want`: "auto", "in-place" or "gather" (anything else: InputError); `writer`: the
  // output's writer on rank 0 (null elsewhere); `writes`: whether this rank has C to write.
  // Throws (on every rank) InputError when "in-place" was asked for and cannot be done.
  static OutputRoute choose(const comm::Comm& comm, io::MatrixWriter* writer, const std::string& want, bool writes);

  bool in_place() const { return in_place_; }
  // "in place" or "gather", with why where it matters (for the report and the C attributes).
  const std::string& description() const { return description_; }
  // Where this rank writes its own rows as they are computed (streaming): its own file handle in
  // place, rank 0's writer, or null (a rank whose block is gathered).
  io::BlockSink* sink() const { return sink_; }

  // Collective, in place only: each active rank writes its C block (rows x cols at (row0, col0))
  // unless `already_written` (streamed during the GEMM), makes its writes durable, and every rank
  // agrees that all did. Appends a "write" phase to `phases` on ranks that wrote.
  void write_own_block(const comm::Comm& comm, std::int64_t row0, std::int64_t col0, std::int64_t rows,
                       std::int64_t cols, const void* c, bool already_written, report::Phases& phases) const;

  // Collective: NaN and Inf in all of C as written, over every rank's writes (result on every
  // rank), for job/result.hpp's commit_result.
  io::NonfiniteCount nonfinite_written(const comm::Comm& comm) const;

 private:
  bool in_place_ = false;
  std::string description_;
  std::unique_ptr<io::BlockFile> own_;  // in place, ranks other than 0
  io::BlockSink* sink_ = nullptr;
};

}  // namespace tessera::job
