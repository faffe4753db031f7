#include "io/direct_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/test_hooks.hpp"

namespace tessera::io {

namespace {

std::atomic<int> g_io_threads{0};

// One thread's writes, as pieces: the fence is looked at before the first, then each time the
// next piece would take what was written since the last look past kFencePiece bytes.
struct Pieces {
  const FenceCheck* live = nullptr;
  std::size_t since = kFencePiece;  // look before the first write
  // The largest piece the next write may be; 0: the run is not live, write nothing.
  std::size_t next(std::size_t want) {
    if (live == nullptr) return want;
    want = std::min(want, kFencePiece);
    if (since + want > kFencePiece) {
      if (!live->live()) return 0;
      since = 0;
    }
    since += want;
    return want;
  }
};

// pread (or pwrite) of `bytes` at `offset`, to the end (short transfers, EINTR). 0, errno on an
// error, -1 at the end of the file (a truncated file) or when nothing could be written, or
// kFenced when `pieces` says the run is no longer live.
int io_all(int fd, bool write, unsigned char* to, std::size_t bytes, std::int64_t offset, Pieces* pieces = nullptr) {
  while (bytes > 0) {
    std::size_t n = std::min<std::size_t>(bytes, std::size_t{1} << 30);
    if (pieces != nullptr && (n = pieces->next(n)) == 0) return kFenced;
    const ssize_t got = write ? ::pwrite(fd, to, n, offset) : ::pread(fd, to, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    to += got;
    bytes -= static_cast<std::size_t>(got);
    offset += got;
  }
  return 0;
}

std::string io_failure(int rc, const char* eof_text) {
  return rc > 0 ? std::string(std::strerror(rc)) : std::string(eof_text);
}

// The token's device and inode (and its stamp, where it has one), opened (not stat'ed) so that NFS
// revalidates it with the server.
bool identity(const std::string& path, struct stat& st, std::int64_t stamp_at = -1, std::uint64_t* stamp = nullptr) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && stamp_at >= 0 && stamp != nullptr)
    ok = ::pread(fd, stamp, sizeof *stamp, static_cast<off_t>(stamp_at)) == static_cast<ssize_t>(sizeof *stamp);
  ::close(fd);
  return ok;
}

}  // namespace

int io_threads() {
  if (const auto threads = env::whole("TESSERA_IO_THREADS")) return static_cast<int>(*threads);
  if (const int set = g_io_threads.load(); set > 0) return set;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void set_io_threads(int threads) { g_io_threads.store(std::max(0, threads)); }

void run_split(int threads, const std::function<void(int)>& work) {
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(std::max(0, threads - 1)));  // (no allocation while threads run)
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  } catch (const std::system_error&) {  // no more threads: the ones started finish, this one does the rest
    for (int t = static_cast<int>(pool.size()) + 1; t < threads; ++t) work(t);
  }
  work(0);
  for (auto& th : pool) th.join();
}

bool direct_io_enabled() { return env::flag("TESSERA_HDF5_DIRECT", true); }

// A block between memory and a contiguous dataset at byte `base` of the file open as `fd`, with
// pread or pwrite split over a few threads: a large transfer from or to the page cache or a
// parallel file system goes several times faster than one HDF5 call in one thread. Whole rows are
// one range of bytes; a column block is one range per row. Returns 0 or the first failure's code
// (errno, or -1: end of file / nothing written, or kFenced: `live` says the run is over).
int transfer_direct(int fd, bool write, std::int64_t base, std::int64_t cols, std::int64_t row0, std::int64_t nrows,
                    std::int64_t col0, std::int64_t ncols, std::size_t esize, void* buffer, const FenceCheck* live) {
  auto* dst = static_cast<unsigned char*>(buffer);
  const bool whole_rows = col0 == 0 && ncols == cols;
  // Pieces: byte ranges of whole rows, or rows of a column block; at most io_threads() threads,
  // each with at least 4 MiB (a thread costs more than it saves on small transfers; a staged
  // GEMM reads in pieces of 32 MiB, 8 threads each).
  const std::size_t total = static_cast<std::size_t>(nrows * ncols) * esize;
  const auto threads =
      static_cast<int>(std::clamp<std::size_t>(total >> 22, 1, static_cast<std::size_t>(io_threads())));
  std::vector<int> failed(static_cast<std::size_t>(threads), 0);
  const auto work = [&](int t) {
    const std::int64_t r0 = nrows * t / threads, r1 = nrows * (t + 1) / threads;
    Pieces pieces{write ? live : nullptr};
    if (whole_rows) {
      const std::size_t row_bytes = static_cast<std::size_t>(cols) * esize;
      failed[static_cast<std::size_t>(t)] = io_all(
          fd, write, dst + static_cast<std::size_t>(r0) * row_bytes, static_cast<std::size_t>(r1 - r0) * row_bytes,
          base + (row0 + r0) * cols * static_cast<std::int64_t>(esize), &pieces);
      return;
    }
    const std::size_t piece = static_cast<std::size_t>(ncols) * esize;
    for (std::int64_t r = r0; r < r1; ++r)
      if (const int rc = io_all(fd, write, dst + static_cast<std::size_t>(r) * piece, piece,
                                base + ((row0 + r) * cols + col0) * static_cast<std::int64_t>(esize), &pieces)) {
        failed[static_cast<std::size_t>(t)] = rc;
        return;
      }
  };
  run_split(threads, work);
  for (const int rc : failed)
    if (rc != 0) return rc;
  return 0;
}

Fence fence_of(const std::string& path, std::int64_t stamp_at) {
  struct stat st {};
  std::uint64_t stamp = 0;
  if (!identity(path, st, stamp_at, &stamp))
    throw IoError("cannot find '" + path + "', the token of this run's output: " + std::strerror(errno));
  return {path, static_cast<std::uint64_t>(st.st_ino), stamp_at, stamp};
}

FenceCheck::FenceCheck(const Fence& fence) : path_(fence.path), stamp_at_(fence.stamp_at), stamp_(fence.stamp) {
  struct stat st {};
  std::uint64_t stamp = 0;
  if (!identity(path_, st, stamp_at_, &stamp) || static_cast<std::uint64_t>(st.st_ino) != fence.inode ||
      (stamp_at_ >= 0 && stamp != stamp_))
    throw IoError("this run no longer writes its output: its token '" + path_ +
                  "' is gone or belongs to another run (the run failed, or was rolled back, on another rank)");
  device_ = static_cast<std::uint64_t>(st.st_dev);
  inode_ = fence.inode;
}

bool FenceCheck::live() const noexcept {
  struct stat st {};
  std::uint64_t stamp = 0;
  return identity(path_, st, stamp_at_, &stamp) && static_cast<std::uint64_t>(st.st_dev) == device_ &&
         static_cast<std::uint64_t>(st.st_ino) == inode_ && (stamp_at_ < 0 || stamp == stamp_);
}

BlockFile::BlockFile(const DirectTarget& target) : t_(target) {
  // Before the file is opened: a process of a failed run (the token gone) opens nothing.
  if (t_.fence.valid()) fence_ = std::make_unique<FenceCheck>(t_.fence);
  fd_ = ::open(t_.file.c_str(), O_WRONLY);
  if (fd_ < 0)
    throw IoError("cannot open the output '" + t_.file + "' to write this rank's part: " + std::strerror(errno));
}

BlockFile::~BlockFile() {
  if (fd_ >= 0) ::close(fd_);
}

void BlockFile::write_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                            const void* data) {
  if (nrows <= 0 || ncols <= 0) return;
  check_inside(row0, col0, nrows, ncols);
  // The block as stored, where that is not as computed: left uninitialized (convert_block's
  // threads write every byte, and take its first-touch page faults between them; a zero-filled
  // vector cost a pass on one thread over a buffer as large as the block).
  std::unique_ptr<unsigned char[]> stored;
  {
    NonfiniteCount seen = count_nonfinite(data, t_.computed, nrows, ncols, row0, col0, t_.cols);
    if (converts(t_.stored, t_.computed)) {
      stored.reset(new unsigned char[static_cast<std::size_t>(nrows * ncols) * t_.esize]);
      convert_block(data, t_.computed, nrows, ncols, t_.stored, stored.get(), &seen, row0, col0, t_.cols);
      data = stored.get();
    }
    const std::lock_guard<std::mutex> hold(counted_lock_);
    counted_.merge(seen);
  }
  put(row0, col0, nrows, ncols, data);
}

void BlockFile::check_inside(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols) const {
  if (row0 < 0 || col0 < 0 || row0 + nrows > t_.rows || col0 + ncols > t_.cols)
    throw InputError("block " + std::to_string(nrows) + "x" + std::to_string(ncols) + " at (" + std::to_string(row0) +
                     ", " + std::to_string(col0) + ") is outside the output '" + t_.file + "'");
}

Stored BlockFile::takes_rounded() const { return io::takes_rounded(t_.stored, t_.computed); }

void BlockFile::write_rounded_block(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols,
                                    const void* data) {
  if (takes_rounded() == Stored::same)
    throw std::logic_error("write_rounded_block: '" + t_.file + "' stores C as computed");
  if (nrows <= 0 || ncols <= 0) return;
  check_inside(row0, col0, nrows, ncols);
  NonfiniteCount seen;
  seen.add_half(data, t_.stored == Stored::bf16, nrows, ncols, row0, col0, t_.cols);
  {
    const std::lock_guard<std::mutex> hold(counted_lock_);
    counted_.merge(seen);
  }
  put(row0, col0, nrows, ncols, data);
}

void BlockFile::put(std::int64_t row0, std::int64_t col0, std::int64_t nrows, std::int64_t ncols, const void* data) {
  if (log::enabled(log::Level::info))
    log::info("writing C rows " + std::to_string(row0) + ".." + std::to_string(row0 + nrows - 1) + ", columns " +
              std::to_string(col0) + ".." + std::to_string(col0 + ncols - 1) + " into '" + t_.file + "' (pwrite)");
  int rc = test_write_point();
  if (rc == 0)
    rc = transfer_direct(fd_, true, t_.base, t_.cols, row0, nrows, col0, ncols, t_.esize, const_cast<void*>(data),
                         fence_.get());
  if (rc == kFenced) {
    const std::string why = "stopped writing C into '" + t_.file + "': this run is no longer live (its token '" +
                            fence_->path() +
                            "' is gone or another run's: the run failed, or was rolled back, elsewhere)";
    log::warn("(rank " + std::to_string(log::rank()) + ") " + why);  // said here too: the other ranks may be gone
    throw IoError(why);
  }
  if (rc != 0)
    throw IoError("writing rows " + std::to_string(row0) + ".." + std::to_string(row0 + nrows - 1) + " of C to '" +
                  t_.file + "' failed: " + io_failure(rc, "nothing written"));
#ifdef __linux__
  // Start writing these bytes back now, while later blocks are still computed, so that the final
  // fsync has less left to wait for. Advisory: errors surface in sync().
  const auto es = static_cast<std::int64_t>(t_.esize);
  const std::int64_t first = t_.base + (row0 * t_.cols + col0) * es;
  const std::int64_t last = t_.base + ((row0 + nrows - 1) * t_.cols + col0 + ncols) * es;
  (void)::sync_file_range(fd_, first, last - first, SYNC_FILE_RANGE_WRITE);
#endif
}

NonfiniteCount BlockFile::nonfinite_written() const {
  const std::lock_guard<std::mutex> hold(counted_lock_);
  return counted_;
}

void BlockFile::sync() {
  if (::fsync(fd_) != 0) throw IoError("writing C to '" + t_.file + "' failed: " + std::strerror(errno));
}

void write_token(const DirectTarget& target, std::uint64_t token) {
  const int fd = ::open(target.file.c_str(), O_WRONLY);
  int rc = fd < 0 ? errno : io_all(fd, true, reinterpret_cast<unsigned char*>(&token), sizeof token, target.base);
  if (rc == 0 && ::fsync(fd) != 0) rc = errno;  // visible to other nodes of a network file system
  if (fd >= 0) ::close(fd);
  if (rc != 0) throw IoError("writing the output '" + target.file + "' failed: " + io_failure(rc, "nothing written"));
}

bool sees_token(const DirectTarget& target, std::uint64_t token) {
  const int fd = ::open(target.file.c_str(), O_RDONLY);
  if (fd < 0) return false;
  std::uint64_t seen = ~token;
  const int rc = io_all(fd, false, reinterpret_cast<unsigned char*>(&seen), sizeof seen, target.base);
  ::close(fd);
  return rc == 0 && seen == token;
}

}  // namespace tessera::io
