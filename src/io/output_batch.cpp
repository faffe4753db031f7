// Several results in one new file, committed together (io/hdf5_io.hpp's OutputBatch): the file
// the batch owns, and the parts of MatrixWriter that write into it.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cleanup.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_library.hpp"
#include "io/matrix_writer_impl.hpp"

namespace tessera::io {

using namespace hdf5;

struct OutputBatch::State {
  std::string file;       // where the results appear
  std::string temp_path;  // the file under its temporary name, once the first result is in it
  bool overwrite = false;
  Handle handle;  // the temporary file, open from the first result to the commit
  int results = 0;
  bool writing = false;  // a writer's dataset is open in it (one at a time)
  bool committed = false;
};

OutputBatch::OutputBatch(std::string file, bool overwrite) : s_(std::make_unique<State>()) {
  s_->file = std::move(file);
  s_->overwrite = overwrite;
}

OutputBatch::~OutputBatch() {
  if (s_->committed || s_->temp_path.empty()) return;
  // As a writer of a new file does: an uncommitted file is emptied, closed and removed.
  if (s_->handle.valid() && ::truncate(s_->temp_path.c_str(), 0) != 0) {
    // nothing more to do: it is unlinked below either way
  }
  (void)s_->handle.close();
  H5Eclear2(H5E_DEFAULT);
  (void)::unlink(s_->temp_path.c_str());
  forget_temporary(s_->temp_path);
}

const std::string& OutputBatch::file() const { return s_->file; }

int OutputBatch::results() const { return s_->results; }

void OutputBatch::commit() {
  State& s = *s_;
  if (s.committed || s.results == 0) return;
  if (s.writing) throw IoError("cannot commit " + in_quotes(s.file) + ": a result is still being written into it");
  if (!s.handle.valid()) throw IoError("cannot commit " + in_quotes(s.file) + ": an earlier commit failed");
  if (H5Fflush(s.handle.get(), H5F_SCOPE_LOCAL) < 0) throw_io("writing " + in_quotes(s.temp_path) + " failed");
  if (s.handle.close() < 0) throw_io("writing " + in_quotes(s.temp_path) + " failed while closing it (disk full?)");
  publish_file(s.temp_path, s.file, s.overwrite);
  s.committed = true;
  log::info(std::to_string(s.results) + " result(s) committed together in " + in_quotes(s.file));
}

void MatrixWriter::Impl::join_batch(OutputBatch& into, hid_t dcpl, const std::vector<hsize_t>& dims, bool want_chunks) {
  OutputBatch::State& s = *into.s_;
  if (s.file != target.file)
    throw std::logic_error("a result for " + in_quotes(target.file) + " given the batch of " + in_quotes(s.file));
  if (s.committed) throw IoError("cannot add " + in_quotes(target) + ": its file's results are already committed");
  if (s.writing) throw std::logic_error("two results written into the batch of " + in_quotes(s.file) + " at once");
  if (!s.handle.valid()) {
    if (!s.temp_path.empty()) throw IoError("cannot add " + in_quotes(target) + ": writing its file failed before");
    s.temp_path = temporary_name(s.file);
    struct stat st {};
    if (::stat(s.temp_path.c_str(), &st) == 0)
      throw IoError("cannot create temporary file " + in_quotes(s.temp_path) +
                    ": it already exists (left by an earlier run?); remove it");
    s.handle = create_temporary_file(s.temp_path, target);
    register_temporary(s.temp_path);  // removed on SIGTERM / SIGINT too
    log::info("the results go into the new file " + in_quotes(s.file) + ", written as " + in_quotes(s.temp_path) +
              " until all are complete");
  }
  if (H5Lexists(s.handle.get(), target.path.c_str(), H5P_DEFAULT) > 0)
    throw InputError("output " + in_quotes(target) + " is written by an earlier product of this launch");
  H5Eclear2(H5E_DEFAULT);
  temp_path = s.temp_path;
  batch = &into;
  batch_file = s.handle.get();
  create_dataset(batch_file, dcpl, dims, want_chunks);
  s.writing = true;
}

void MatrixWriter::Impl::commit_in_batch() {
  close_direct();  // the blocks written with pwrite are in the file; the batch's fsync makes them durable
  if (!dataset.valid()) throw IoError("cannot commit " + in_quotes(target) + ": an earlier commit failed");
  if (H5Dflush(dataset.get()) < 0) throw_io("writing " + where() + " failed");
  if (dataset.close() < 0) throw_io("writing " + where() + " failed while closing it (disk full?)");
  OutputBatch::State& s = *batch->s_;
  s.writing = false;
  ++s.results;
  committed = true;
}

void MatrixWriter::Impl::leave_batch() {
  (void)dataset.close();
  H5Eclear2(H5E_DEFAULT);
  OutputBatch::State& s = *batch->s_;
  s.writing = false;
  if (s.handle.valid() && H5Lexists(s.handle.get(), target.path.c_str(), H5P_DEFAULT) > 0 &&
      H5Ldelete(s.handle.get(), target.path.c_str(), H5P_DEFAULT) < 0) {
    // The file cannot be trusted to hold only complete results: none of it is committed.
    log::warn("could not remove the incomplete " + where() + "; none of " + in_quotes(s.file) + "'s results is kept");
    (void)s.handle.close();
  }
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace tessera::io
