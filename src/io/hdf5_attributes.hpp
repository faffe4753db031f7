#pragma once
// Writing one attribute on a dataset (the writer's set_attributes). Internal to io/.
#include <hdf5.h>

#include <string>

#include "io/hdf5_io.hpp"

namespace tessera::io::hdf5 {

// Writes `a` on `dset`, replacing any attribute of the same name. `where` names the dataset in
// messages. Throws InputError for an empty name, IoError when HDF5 fails.
void write_attribute(hid_t dset, const Attribute& a, const std::string& where);

}  // namespace tessera::io::hdf5
