#pragma once
// Entering the HDF5 library from io/: its error printing switched off, the lock that keeps a
// non-thread-safe HDF5 to one thread at a time, its error stack turned into one line, and the
// few helpers every message and hyperslab uses. Internal to io/ (hdf5_open, read_block,
// attributes, matrix_writer).
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::io::hdf5 {

// HDF5 prints its whole error stack to stderr by default; users must only ever see our one-line
// messages, so printing is switched off before the first HDF5 call of any entry point. In a
// thread-safe HDF5 that setting belongs to the thread, so each thread switches it off once.
void ensure_init();

// A filter callback's output handed to HDF5 (tessera's LZ4 and zstd filters): `out`, malloc'd,
// `allocated` bytes, replaces `*buf` (freed); returns `bytes`, the filtered size.
std::size_t hand_to_hdf5(void** buf, std::size_t* buf_size, void* out, std::size_t allocated, std::size_t bytes);
// The same for bytes in a vector, copied into a malloc'd buffer first; 0 (HDF5's failure) where
// that cannot be allocated, `*buf` then untouched.
std::size_t hand_to_hdf5(void** buf, std::size_t* buf_size, const std::vector<unsigned char>& bytes);

// The pipeline reads A on one thread while it writes C on another. HDF5 built without thread
// safety must not be entered by two threads at once, so the entry points that may run on such
// threads (read_block, write_block) hold this lock around their HDF5 calls; the bulk pread and
// pwrite of contiguous datasets run outside it.
std::mutex& lock();

std::string in_quotes(const std::string& s);
std::string in_quotes(const DatasetRef& ref);

// HDF5's current error stack, innermost (most specific) entry first. Clears the stack.
std::vector<std::string> error_stack();
// The most useful line of an error stack: the operating system's message when the failure came
// from a system call (e.g. "No space left on device"), else the innermost HDF5 description.
std::string summarize(const std::vector<std::string>& descs);
// IoError(message + " (HDF5: <the stack's most useful line>)").
[[noreturn]] void throw_io(const std::string& message);

// The memory type of an element of `t` (not to be closed): float, double, or for a complex dtype
// the compound h5py stores a complex number as (fields r and i, of float or double, side by side as
// std::complex lays them out; HDF5 converts another byte order or layout of those fields).
hid_t native_type(DType t);
// A new type (the caller closes it): the compound of r and i, little-endian IEEE floats of
// complex `t`'s part, as h5py writes complex64 and complex128 datasets.
hid_t complex_file_type(DType t);
// Checks that [first, first+count) lies inside [0, extent) without overflowing.
bool in_range(std::int64_t first, std::int64_t count, std::int64_t extent);
// "block 5x3 at (4, 0)": shape and origin, so absurd (overflowing) requests print as given.
std::string block_text(std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols);
std::string shape_text(std::int64_t rows, std::int64_t cols);
// Selects the block in a fresh copy of the dataset's file space (of matrix `index` of a 3-D
// dataset when >= 0; rows of the stack of a 3-D dataset's matrices of `stacked_rows` rows each
// when > 0); returns it with a matching contiguous memory space (both invalid on failure).
std::pair<Handle, Handle> block_spaces(hid_t dset, std::int64_t row0, std::int64_t nrows, std::int64_t col0,
                                       std::int64_t ncols, std::int64_t index = -1, std::int64_t stacked_rows = 0);

}  // namespace tessera::io::hdf5
