#pragma once
// Matrices moved between memory and contiguous storage in a file with pread/pwrite, without
// HDF5: the bulk of reading a contiguous input and of writing C. HDF5 only tells where the
// elements lie (matrix_writer.cpp, read_block.cpp); these functions never call it, so they run on any thread and on
// every rank at once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "io/chunked_write.hpp"
#include "io/nonfinite.hpp"
#include "io/stored_type.hpp"

namespace tessera::io {

// Direct (pread/pwrite) transfers, unless TESSERA_HDF5_DIRECT=0 (HDF5 then moves every byte).
bool direct_io_enabled();

// Threads a large transfer or decompression may use: TESSERA_IO_THREADS if set, else what
// set_io_threads() was given (the job: this rank's share of the node's cores), else the cores of
// this machine.
int io_threads();
void set_io_threads(int threads);
// work(0), ..., work(threads - 1): work(0) on this thread, each other on a thread of its own; where
// no more threads can be started, this thread runs the rest. Returns when all are done. (`work`
// must not throw.)
void run_split(int threads, const std::function<void(int)>& work);

// The liveness token of a run writing an output (fencing): a file that is there, with one inode,
// exactly while that run may write C, and gone once it commits or fails: the existing file's
// rollback journal (made before anything is written, removed by the commit and by the rollback),
// or the new file's temporary (renamed by the commit, removed by the rollback). A process of a run
// that failed (its node cut off while the others were ended and the file rolled back) finds it
// gone, or another run's (another inode), and writes nothing more.
struct Fence {
  std::string path;         // "": none (nothing to fence: tests, a single process)
  std::uint64_t inode = 0;  // as the writer of the output saw it (the same from every node)
  // Where the token holds a number of its own run (the journal: a random one), since a file system
  // may give the next run's token the inode number this one's just freed; -1: none (a temporary,
  // whose name is the run's own).
  std::int64_t stamp_at = -1;
  std::uint64_t stamp = 0;
  bool valid() const { return !path.empty(); }
};
// The token of `path` as it is now (its inode, and its stamp at `stamp_at`); throws IoError when
// it is not there.
Fence fence_of(const std::string& path, std::int64_t stamp_at = -1);
// Pieces of C written between two looks at the fence, at most (each look: one open and fstat).
inline constexpr std::size_t kFencePiece = std::size_t{64} << 20;

// Where a new output's contiguous dataset lies in its (temporary) file, so that any process that
// sees the file can write its part of the matrix there. base < 0: no such place (HDF5 writes).
struct DirectTarget {
  std::string file;
  std::int64_t base = -1;
  std::int64_t rows = 0, cols = 0;
  std::size_t esize = 0;  // of a stored element
  Fence fence;            // the run's token: every piece written only while it is there
  // The blocks given to BlockFile (C as computed), and what they are stored as (io/stored_type.hpp).
  DType computed = DType::f64;
  Stored stored = Stored::same;
  bool valid() const { return base >= 0; }
};

// A block of a row-major matrix between memory and a contiguous dataset whose element (0, 0) is
// at byte `base` of the file open as `fd` (its rows `cols` long), split over a few threads.
// Returns 0 or the first failure's code (errno, or -1: end of file / nothing written, or
// kFenced). `live`, when given, is asked before each piece of at most kFencePiece bytes a thread
// writes; false: that thread writes nothing more, and the transfer returns kFenced.
inline constexpr int kFenced = -2;
class FenceCheck;
int transfer_direct(int fd, bool write, std::int64_t base, std::int64_t cols, std::int64_t row0, std::int64_t nrows,
                    std::int64_t col0, std::int64_t ncols, std::size_t esize, void* buffer,
                    const FenceCheck* live = nullptr);

// A process's view of a Fence: the token's identity on this node (device and inode; a network
// file system's device number differs between nodes, its inode does not), then one look per piece.
class FenceCheck {
 public:
  // Throws IoError when the token is not there or is not the writer's (another inode).
  explicit FenceCheck(const Fence& fence);
  // Whether the token is still the one found at the start (opened, so that a network file system
  // asks its server: close-to-open consistency).
  bool live() const noexcept;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::int64_t stamp_at_ = -1;
  std::uint64_t stamp_ = 0;
  std::uint64_t device_ = 0, inode_ = 0;
};

// Something blocks of a matrix can be written to, at their place: the output file's writer
// (MatrixWriter, rank 0) or one rank's BlockFile.
class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // data: nrows x ncols row-major, placed at (row0, col0). Throws IoError / InputError.
  virtual void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                           const void* data) = 0;
  // The same block, with those of its chunks that its rank compressed already (`ready`, in the
  // layout of chunk_layout()): a sink that compresses C stores them as they are and compresses the
  // rest; any other writes the block (the default).
  virtual void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                           const void* data, const std::vector<CompressedChunk>& ready) {
    (void)ready;
    write_block(row0, col0, nrows, ncols, data);
  }
  // A block every element of which lies in `ready`'s chunks (each wholly inside the block), sent
  // compressed by its rank without the block itself; `seen`: its NaN and Inf as that rank counted
  // them. Only a sink that compresses C (chunk_layout()) takes one: any other throws logic_error.
  virtual void write_chunks(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                            const std::vector<CompressedChunk>& ready, const NonfiniteCount& seen) {
    (void)row0, (void)col0, (void)nrows, (void)ncols, (void)ready, (void)seen;
    throw std::logic_error("write_chunks: this sink does not store compressed chunks");
  }
  // NaN and Inf among the elements written through this sink so far (a product of finite inputs
  // can overflow: the run warns or refuses before it commits C).
  virtual NonfiniteCount nonfinite_written() const = 0;
  // Stored::f16 or Stored::bf16 where this sink stores a float32 C as that 16-bit type and takes
  // blocks already rounded to it (write_rounded_block: rounded on the GPU); Stored::same where
  // it takes blocks only as computed.
  virtual Stored takes_rounded() const { return Stored::same; }
  // A block of 2-byte values, rounded as convert_block rounds (to nearest, ties to even; Inf
  // beyond the range), so that what is stored is what write_block would have stored (a NaN's
  // payload aside); its NaN
  // and Inf counted as stored (the product's own and those of overflow alike). Only a sink whose
  // takes_rounded() is not Stored::same takes one; any other throws logic_error.
  virtual void write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                                   const void* data) {
    (void)row0, (void)col0, (void)nrows, (void)ncols, (void)data;
    throw std::logic_error("write_rounded_block: this sink takes C only as computed");
  }
};

// One process's handle on an output it shares with others (DirectTarget): writes its blocks with
// pwrite, starting their write-back to the disk at once, and makes them durable with sync().
class BlockFile : public BlockSink {
 public:
  explicit BlockFile(const DirectTarget& target);  // throws IoError when the file cannot be opened
  ~BlockFile() override;
  BlockFile(const BlockFile&) = delete;
  BlockFile& operator=(const BlockFile&) = delete;

  void write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                   const void* data) override;
  NonfiniteCount nonfinite_written() const override;
  Stored takes_rounded() const override;
  void write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                           const void* data) override;
  // fsync: what this process wrote is on the disk (network file systems report write errors here).
  void sync();

 private:
  void check_inside(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols) const;
  // The block as stored, at its place (pwrite), its write-back started.
  void put(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* stored);
  DirectTarget t_;
  std::unique_ptr<FenceCheck> fence_;
  int fd_ = -1;
  mutable std::mutex counted_lock_;
  NonfiniteCount counted_;
};

// Whether other processes see the same output file: the creator writes a random token where the
// matrix starts (overwritten by element (0, 0) later), every other process reads it back. A
// process on a node without the creator's file system reads nothing or something else.
void write_token(const DirectTarget& target, std::uint64_t token);  // throws IoError
bool sees_token(const DirectTarget& target, std::uint64_t token);   // never throws

}  // namespace tessera::io
