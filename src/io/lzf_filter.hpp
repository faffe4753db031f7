#pragma once
// The LZF filter (HDF5 filter id 32000, h5py's `compression="lzf"`) for reading inputs, where the
// HDF5 library cannot load a plugin for it: tessera's own decoder over liblzf, registered with
// HDF5 once. Debian 12's hdf5-plugin-lzf cannot be loaded (its plugin does not link liblzf:
// "undefined symbol: lzf_decompress"), so without this h5py's LZF files would be refused there.
// Internal to io/.
namespace tessera::io::hdf5 {

// Registers the decoder unless HDF5 already has the filter; a no-op in a build without liblzf.
void register_lzf_filter();

}  // namespace tessera::io::hdf5
