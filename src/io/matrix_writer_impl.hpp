#pragma once
// MatrixWriter's state (io/hdf5_io.hpp), shared by its two files: matrix_writer.cpp (a new file,
// the blocks, the commit) and matrix_writer_existing.cpp (a new dataset in an existing file,
// through the file's rollback journal). Internal to io/.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/chunked_write.hpp"
#include "io/cleanup.hpp"
#include "io/direct_io.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_library.hpp"
#include "io/journal.hpp"
#include "io/nonfinite.hpp"

namespace tessera::io {

// A new file (`temp_path`, written under that name) with HDF5's strong close.
Handle create_temporary_file(const std::string& temp_path, const DatasetRef& target);
// The file complete under its temporary name made durable (fsync) and put in place: linked as
// `target` (failing if that appeared meanwhile), or renamed over it with `overwrite`.
void publish_file(const std::string& temp_path, const std::string& target, bool overwrite);

struct MatrixWriter::Impl {
  DatasetRef target;
  std::string temp_path;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t stacked_rows = 0;  // a batch (WriteOptions::matrices): each matrix's rows; 0: 2-D
  DType dtype = DType::f64;       // of the blocks given (C as computed)
  Stored stored = Stored::same;   // what they are stored as (converted in write_block where it differs)
  std::size_t esize() const { return stored_size(stored, dtype); }
  bool overwrite = false;
  bool created = false;  // the temporary file is ours: remove it unless committed
  bool committed = false;
  // Into an existing file: the temporary dataset (a root-group link) made there; the file stays
  // closed between the constructor and the commit (and each block HDF5 writes), and the
  // attributes wait for the commit. Every change HDF5 makes to the file goes through `journal`
  // (io/journal.hpp), which undoes them all unless the commit ends: the file is then byte for
  // byte as it was, whatever stopped the run (an error, a signal, a kill, a full disk).
  bool in_file = false;
  std::string temp_dataset;
  // Into a window of an existing dataset (the target names one: "c.h5:/C[0:100, :]", "c.h5:/C[3]"):
  // written in place, where it lies, through the same journal; nothing else of the file changes,
  // the dataset's attributes included. Its place in the dataset's own coordinates.
  bool window = false;
  std::int64_t window_row0 = 0, window_col0 = 0, window_index = -1;
  bool dataset_created = false;
  std::vector<Attribute> attributes;
  std::unique_ptr<RollbackJournal> journal;  // declared before the handles: outlives them
  std::vector<std::string> notes;            // leftovers of earlier runs removed, for the user
  Handle file;                               // declared before dataset: closed after it
  Handle dataset;
  // Contiguous datasets are written with pwrite at their offset in the file (see write_block);
  // invalid where HDF5 writes (chunked or compressed output).
  DirectTarget direct;
  std::unique_ptr<BlockFile> direct_file;
  // A gzip-compressed C: its chunks compressed by tessera's threads, stored with H5Dwrite_chunk.
  std::unique_ptr<ChunkedWriter> chunked;
  // NaN and Inf among the elements HDF5 wrote so far (write_block may run on another thread);
  // direct_file counts its own.
  NonfiniteCount nonfinite;
  mutable std::mutex nonfinite_lock;
  // Into a batch's file (io/hdf5_io.hpp's OutputBatch): the batch owns the file; `file` stays empty.
  OutputBatch* batch = nullptr;
  hid_t batch_file = H5I_INVALID_HID;

  std::string where() const {
    if (batch != nullptr) return hdf5::in_quotes(temp_path + ":" + target.path);
    if (window) return hdf5::in_quotes(target);
    return in_file ? hdf5::in_quotes(target.file + ":" + temp_dataset) : hdf5::in_quotes(temp_path + ":" + target.path);
  }
  void close_direct() {
    if (!direct_file) return;
    const std::lock_guard<std::mutex> hold(nonfinite_lock);
    nonfinite.merge(direct_file->nonfinite_written());
    direct_file.reset();
  }

  void create_in_existing_file(hid_t dcpl, const std::vector<hsize_t>& dims);
  // The dataset in the new file `in` (this writer's temporary file, or a batch's): its space
  // allocated now where blocks can be written in place (direct).
  void create_dataset(hid_t in, hid_t dcpl, const std::vector<hsize_t>& dims, bool want_chunks);
  void join_batch(OutputBatch& into, hid_t dcpl, const std::vector<hsize_t>& dims,
                  bool want_chunks);  // output_batch.cpp
  void commit_in_batch();
  void leave_batch();                   // uncommitted: the dataset unlinked from the batch's file
  void open_window_in_existing_file();  // matrix_writer_existing.cpp
  // The dataset the blocks go to: the temporary one, or the window's own.
  const std::string& dataset_in_file() const { return window ? target.path : temp_dataset; }
  void reserve_elements(std::uint64_t offset, std::uint64_t bytes);
  void commit_in_file();

  // The existing file as it was before the run (an error, or an exception): the journal puts
  // back every byte HDF5 changed and cuts the file to its old size. Should that fail, the
  // journal stays and the next tessera command touching the file restores it.
  void roll_back_existing_file() {
    (void)dataset.close();
    (void)file.close();
    H5Eclear2(H5E_DEFAULT);
    journal.reset();
  }

  // Runs also when the writer's constructor throws after creating the temporary file.
  ~Impl() {
    close_direct();
    if (committed) return;
    if (batch != nullptr) {
      leave_batch();
      return;
    }
    if (in_file) {
      roll_back_existing_file();
      return;
    }
    // Closing flushes HDF5's caches. If that flush fails (full disk, quota), HDF5 1.10 frees the
    // file but keeps its id, and the library crashes at exit (HDFFV-11052). The file is being
    // discarded anyway, so empty it first: that returns the space the final flush needs.
    if (created && (file.valid() || dataset.valid()) && ::truncate(temp_path.c_str(), 0) != 0) {
      // nothing more to do: the file is unlinked below either way
    }
    (void)dataset.close();
    (void)file.close();
    H5Eclear2(H5E_DEFAULT);
    if (created) (void)::unlink(temp_path.c_str());
    if (created) forget_temporary(temp_path);
  }
};

}  // namespace tessera::io
