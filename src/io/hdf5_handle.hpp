#pragma once
// RAII for HDF5 identifiers, shared by the io/ files that call HDF5 (hdf5_library, hdf5_open, read_block,
// hdf5_attributes, matrix_writer, data_sources). Internal to io/: nothing outside it includes HDF5.
#include <hdf5.h>

namespace tessera::io {

constexpr hid_t kNoId = -1;

// Owns one HDF5 identifier and closes it with the close function of its kind. Close errors in
// the destructor are ignored (an exception may already be in flight); callers that must know
// whether closing worked (the writer's commit) call close() and check.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { (void)close(); }
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = kNoId; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      (void)close();
      id_ = other.id_;
      closer_ = other.closer_;
      other.id_ = kNoId;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  herr_t close() {
    herr_t status = 0;
    if (id_ >= 0 && closer_ != nullptr) status = closer_(id_);
    id_ = kNoId;
    return status;
  }

 private:
  hid_t id_ = kNoId;
  Closer closer_ = nullptr;
};

inline Handle own_file(hid_t id) { return Handle(id, H5Fclose); }
inline Handle own_object(hid_t id) { return Handle(id, H5Oclose); }  // any object: group, dataset
inline Handle own_dataset(hid_t id) { return Handle(id, H5Dclose); }
inline Handle own_space(hid_t id) { return Handle(id, H5Sclose); }
inline Handle own_type(hid_t id) { return Handle(id, H5Tclose); }
inline Handle own_plist(hid_t id) { return Handle(id, H5Pclose); }
inline Handle own_attr(hid_t id) { return Handle(id, H5Aclose); }

}  // namespace tessera::io
