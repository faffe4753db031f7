#pragma once
// Opening an input for reading: the file (with the reasons it cannot be opened told apart), the
// dataset at a path (each level checked), and a 2-D numeric matrix with its description. Internal
// to io/ (read_block, hdf5_attributes).
#include <hdf5.h>

#include <string>

#include "core/dtype.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::io::hdf5 {

// Opens `file` read-only. Throws InputError: missing, a directory, unreadable, not HDF5 (or
// truncated); IoError when HDF5 cannot lock it.
Handle open_file_readonly(const std::string& file);

// Opens the object at ref.path and makes sure it is a dataset. Throws InputError naming the
// level that is missing, broken or not a group.
Handle open_dataset_object(hid_t file, const DatasetRef& ref);

struct TypeDesc {
  std::string name;  // "float32", "int16", "string", ...
  bool supported = false;
  bool is_integer = false;
  DType natural = DType::f64;
};
TypeDesc describe_type(hid_t type);

// An open, validated 2-D numeric dataset and its description.
struct OpenDataset {
  Handle file;  // declared first: destroyed last
  Handle dataset;
  DatasetInfo info;
};
// Throws InputError for anything inspect() refuses (docs in hdf5_io.hpp).
OpenDataset open_matrix(const DatasetRef& ref);

}  // namespace tessera::io::hdf5
