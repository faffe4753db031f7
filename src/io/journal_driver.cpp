// The journaled file driver (io/journal_driver.hpp): HDF5's virtual-file-driver interface
// (H5FD_class_t, HDF5 1.10) over POSIX calls. HDF5 asks it to open, read, write, grow and cut
// the file; it keeps the end of the allocated space (eoa) HDF5 sets and the file's real end (eof).
#include "io/journal_driver.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "io/hdf5_library.hpp"
#include "io/test_hooks.hpp"

#if H5_VERS_MAJOR != 1 || H5_VERS_MINOR != 10
#error "io/journal_driver.cpp implements HDF5 1.10's file-driver interface (H5FD_class_t); port it to this HDF5"
#endif

namespace tessera::io::hdf5 {

namespace {

struct DriverInfo {
  RollbackJournal* journal;
};

struct JournaledFile {
  H5FD_t pub;  // first: HDF5 casts between the two
  int fd = -1;
  RollbackJournal* journal = nullptr;
  haddr_t eoa = 0;
  haddr_t eof = 0;
  dev_t device = 0;
  ino_t inode = 0;
};

// A write that failed: the journal stops all further writes (RollbackJournal::abandon); HDF5's
// error stack gets the system's reason, in the form io::hdf5::summarize picks out (as HDF5's own
// driver words it), so the user reads "No space left on device", not "write request failed".
// While HDF5 closes the file, HDF5 is told nothing (the caller asks the journal afterwards).
herr_t failed(RollbackJournal& j, const char* what, int err) {
  j.abandon(err);
  if (j.closing()) return 0;
  H5Epush2(H5E_DEFAULT, __FILE__, what, __LINE__, H5E_ERR_CLS, H5E_IO, H5E_WRITEERROR,
           "%s failed, errno = %d, error message = '%s'", what, err, std::strerror(err));
  return -1;
}

JournaledFile* of(H5FD_t* f) { return reinterpret_cast<JournaledFile*>(f); }
const JournaledFile* of(const H5FD_t* f) { return reinterpret_cast<const JournaledFile*>(f); }

H5FD_t* open_file(const char* name, unsigned flags, hid_t fapl, haddr_t /*maxaddr*/) {
  const auto* info = static_cast<const DriverInfo*>(H5Pget_driver_info(fapl));
  if (info == nullptr || info->journal == nullptr) return nullptr;
  // Only the journal's own file, and only as it is: a journaled file is never created or emptied.
  if ((flags & (H5F_ACC_CREAT | H5F_ACC_TRUNC | H5F_ACC_EXCL)) != 0) return nullptr;
  const int mode = (flags & H5F_ACC_RDWR) != 0 ? O_RDWR : O_RDONLY;
  const int fd = ::open(name, mode | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return nullptr;
  }
  auto* f = new (std::nothrow) JournaledFile();
  if (f == nullptr) {
    ::close(fd);
    return nullptr;
  }
  f->fd = fd;
  f->journal = info->journal;
  f->eof = static_cast<haddr_t>(st.st_size);
  f->device = st.st_dev;
  f->inode = st.st_ino;
  return &f->pub;
}

herr_t close_file(H5FD_t* file) {
  JournaledFile* f = of(file);
  const int rc = ::close(f->fd);
  delete f;
  return rc == 0 ? 0 : -1;
}

int compare(const H5FD_t* a, const H5FD_t* b) {
  const JournaledFile* x = of(a);
  const JournaledFile* y = of(b);
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->inode != y->inode) return x->inode < y->inode ? -1 : 1;
  return 0;
}

herr_t query(const H5FD_t* /*file*/, unsigned long* flags) {
  // What HDF5's default driver declares: metadata and small raw data gathered into larger
  // writes, a POSIX descriptor behind get_handle.
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
  return 0;
}

haddr_t get_eoa(const H5FD_t* file, H5FD_mem_t /*type*/) { return of(file)->eoa; }

herr_t set_eoa(H5FD_t* file, H5FD_mem_t /*type*/, haddr_t addr) {
  of(file)->eoa = addr;
  return 0;
}

haddr_t get_eof(const H5FD_t* file, H5FD_mem_t /*type*/) { return of(file)->eof; }

herr_t get_handle(H5FD_t* file, hid_t /*fapl*/, void** handle) {
  *handle = &of(file)->fd;
  return 0;
}

herr_t read_bytes(H5FD_t* file, H5FD_mem_t /*type*/, hid_t /*dxpl*/, haddr_t addr, size_t size, void* buffer) {
  JournaledFile* f = of(file);
  auto* p = static_cast<unsigned char*>(buffer);
  while (size > 0) {
    const ssize_t got = ::pread(f->fd, p, size, static_cast<off_t>(addr));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) {  // past the end of the file: HDF5 expects zeros
      std::memset(p, 0, size);
      break;
    }
    p += got;
    size -= static_cast<size_t>(got);
    addr += static_cast<haddr_t>(got);
  }
  return 0;
}

herr_t write_bytes(H5FD_t* file, H5FD_mem_t /*type*/, hid_t /*dxpl*/, haddr_t addr, size_t size, const void* buffer) {
  JournaledFile* f = of(file);
  RollbackJournal& j = *f->journal;
  if (j.abandoned()) return 0;  // the run rolls back: see RollbackJournal::abandon
  if (const int err = j.before_write_noexcept(addr, buffer, size); err != 0)
    return failed(j, "saving the original bytes in the journal", err);
  if (const int injected = test_write_point(); injected != 0) return failed(j, "write", injected);
  const auto* p = static_cast<const unsigned char*>(buffer);
  haddr_t at = addr;
  size_t left = size;
  while (left > 0) {
    const ssize_t put = ::pwrite(f->fd, p, left, static_cast<off_t>(at));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return failed(j, "write", put == 0 ? EIO : errno);
    p += put;
    left -= static_cast<size_t>(put);
    at += static_cast<haddr_t>(put);
  }
  if (at > f->eof) f->eof = at;
  return 0;
}

herr_t flush(H5FD_t* /*file*/, hid_t /*dxpl*/, hbool_t /*closing*/) { return 0; }

// HDF5 sets the file's end to its allocated end when it closes the file.
herr_t truncate_file(H5FD_t* file, hid_t /*dxpl*/, hbool_t /*closing*/) {
  JournaledFile* f = of(file);
  if (f->eoa == f->eof) return 0;
  RollbackJournal& j = *f->journal;
  if (j.abandoned()) return 0;
  int err = f->eoa < f->eof ? j.before_truncate_noexcept(f->eoa) : 0;
  if (err != 0) return failed(j, "saving the original bytes in the journal", err);
  err = test_write_point();
  if (err == 0 && ::ftruncate(f->fd, static_cast<off_t>(f->eoa)) != 0) err = errno;
  if (err != 0) return failed(j, "truncate", err);
  f->eof = f->eoa;
  return 0;
}

herr_t lock_file(H5FD_t* file, hbool_t rw) {
  const int op = (rw ? LOCK_EX : LOCK_SH) | LOCK_NB;
  if (::flock(of(file)->fd, op) == 0) return 0;
  // HDF5's own message for the default driver, so open_file_readwrite tells it apart.
  H5Epush2(H5E_DEFAULT, __FILE__, "lock_file", __LINE__, H5E_ERR_CLS, H5E_FILE, H5E_CANTLOCKFILE,
           "unable to lock file, errno = %d, error message = '%s'", errno, std::strerror(errno));
  return -1;
}

herr_t unlock_file(H5FD_t* file) { return ::flock(of(file)->fd, LOCK_UN) == 0 ? 0 : -1; }

hid_t driver_id() {
  static std::once_flag once;
  static hid_t id = -1;
  std::call_once(once, [] {
    static H5FD_class_t cls;
    std::memset(&cls, 0, sizeof cls);
    cls.name = "tessera-journal";
    cls.maxaddr = static_cast<haddr_t>(INT64_MAX);
    cls.fc_degree = H5F_CLOSE_WEAK;
    cls.fapl_size = sizeof(DriverInfo);  // copied with memcpy: a pointer to the journal
    cls.open = open_file;
    cls.close = close_file;
    cls.cmp = compare;
    cls.query = query;
    cls.get_eoa = get_eoa;
    cls.set_eoa = set_eoa;
    cls.get_eof = get_eof;
    cls.get_handle = get_handle;
    cls.read = read_bytes;
    cls.write = write_bytes;
    cls.flush = flush;
    cls.truncate = truncate_file;
    cls.lock = lock_file;
    cls.unlock = unlock_file;
    const H5FD_mem_t map[] = H5FD_FLMAP_DICHOTOMY;
    std::memcpy(cls.fl_map, map, sizeof map);
    id = H5FDregister(&cls);
  });
  return id;
}

}  // namespace

Handle journaled_access(RollbackJournal& journal) {
  const hid_t driver = driver_id();
  if (driver < 0) throw_io("cannot register tessera's journaled HDF5 file driver");
  Handle fapl = own_plist(H5Pcreate(H5P_FILE_ACCESS));
  const DriverInfo info{&journal};
  if (!fapl.valid() || H5Pset_driver(fapl.get(), driver, &info) < 0 ||
      H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    throw_io("cannot set up HDF5 to write " + in_quotes(journal.file()));
  return fapl;
}

}  // namespace tessera::io::hdf5
