#pragma once
// Where an input dataset's elements come from, and whether the files hold all of them.
//
// An HDF5 dataset may keep its elements outside the file that was named: behind an external link
// (on any group of its path), in the source datasets of a virtual dataset (VDS), or in external
// raw data files. And HDF5 hands back the fill value, without a word, for elements no file holds:
// a VDS source file that is missing, a region of a VDS that no source maps, chunks never written,
// contiguous storage never allocated, an external raw file shorter than the data. tessera must
// neither read such an input as if it were data nor let its output replace a file that holds an
// input's data, so it looks at all of this before anything is read (job/job_paths.hpp).
#include <string>
#include <vector>

#include "io/hdf5_io.hpp"

namespace tessera::io {

struct DataSources {
  // Every file read for the dataset: the one named, files reached through external links, VDS
  // source files (and, recursively, theirs), external raw data files. Paths as HDF5 opens them
  // (relative to the working directory, or absolute). The named file comes first.
  std::vector<std::string> files;
  // Elements that are read as a fill value the file itself declares (a user-defined fill
  // value), which tessera accepts but says so: one line each, for the user.
  std::vector<std::string> notes;
};

// `role` names the input in messages ("A", "B", "C"). Throws InputError naming the dataset and the
// missing file or region when HDF5 would fill elements the files do not hold, unless the dataset
// declares its own fill value (then a note). Opens files read-only; reads metadata only (and, for
// external raw files, their sizes).
DataSources locate_data(const DatasetRef& ref, const std::string& role);

}  // namespace tessera::io
