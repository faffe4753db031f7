// Attributes: building them (Attribute::of), writing one, and reading all of a dataset's as text.
#include "io/hdf5_attributes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/words.hpp"
#include "io/hdf5_library.hpp"
#include "io/hdf5_open.hpp"

namespace tessera::io {

using namespace hdf5;

namespace {

herr_t collect_attr_name(hid_t /*loc*/, const char* name, const H5A_info_t* /*info*/, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  try {
    out->emplace_back(name);
  } catch (...) {
    return -1;
  }
  return 0;
}

std::string format_real(double v) { return shortest_decimal(v, 6); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

std::string attribute_text(hid_t attr, const std::string& where) {
  Handle space = own_space(H5Aget_space(attr));
  Handle type = own_type(H5Aget_type(attr));
  if (!space.valid() || !type.valid()) throw_io("cannot read attribute of " + where);
  const hssize_t npoints = H5Sget_simple_extent_npoints(space.get());
  if (npoints < 0) throw_io("cannot read attribute of " + where);
  const auto n = static_cast<std::size_t>(npoints);
  if (n == 0) return {};
  std::vector<std::string> items;
  items.reserve(n);

  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      if (H5Tis_variable_str(type.get()) > 0) {
        Handle mem = own_type(H5Tcopy(H5T_C_S1));
        if (!mem.valid() || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 ||
            H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
          throw_io("cannot read attribute of " + where);
        std::vector<char*> ptrs(n, nullptr);
        if (H5Aread(attr, mem.get(), ptrs.data()) < 0) throw_io("cannot read attribute of " + where);
        for (char* p : ptrs) items.emplace_back(p != nullptr ? p : "");
        H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
      } else {
        const std::size_t size = H5Tget_size(type.get());
        std::vector<char> buf(size * n + 1, '\0');
        if (H5Aread(attr, type.get(), buf.data()) < 0) throw_io("cannot read attribute of " + where);
        const bool space_padded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
        for (std::size_t i = 0; i < n; ++i) {
          const char* begin = buf.data() + i * size;
          std::string s(begin, strnlen(begin, size));
          if (space_padded) s.erase(s.find_last_not_of(' ') + 1);
          items.push_back(std::move(s));
        }
      }
      break;
    }
    case H5T_INTEGER: {
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE) {
        std::vector<unsigned long long> v(n);
        if (H5Aread(attr, H5T_NATIVE_ULLONG, v.data()) < 0) throw_io("cannot read attribute of " + where);
        for (auto x : v) items.push_back(std::to_string(x));
      } else {
        std::vector<long long> v(n);
        if (H5Aread(attr, H5T_NATIVE_LLONG, v.data()) < 0) throw_io("cannot read attribute of " + where);
        for (auto x : v) items.push_back(std::to_string(x));
      }
      break;
    }
    case H5T_FLOAT: {
      std::vector<double> v(n);
      if (H5Aread(attr, H5T_NATIVE_DOUBLE, v.data()) < 0) throw_io("cannot read attribute of " + where);
      for (double x : v) items.push_back(format_real(x));
      break;
    }
    default:
      return "(" + describe_type(type.get()).name + " attribute)";
  }
  return join(items);
}

}  // namespace

// Writes one attribute, replacing any of the same name.
void hdf5::write_attribute(hid_t dset, const Attribute& a, const std::string& where) {
  if (a.name.empty()) throw InputError("attribute names must not be empty (writing " + where + ")");
  const std::string what = "cannot write attribute '" + a.name + "' to " + where;
  const htri_t exists = H5Aexists(dset, a.name.c_str());
  if (exists < 0) throw_io(what);
  if (exists > 0 && H5Adelete(dset, a.name.c_str()) < 0) throw_io(what);

  Handle space;
  Handle owned_type;  // file type when we built one (strings)
  hid_t file_type = kNoId;
  hid_t mem_type = kNoId;
  const void* data = nullptr;
  const std::int64_t dummy = 0;
  const char* text_ptr = nullptr;
  const auto scalar = [&](hid_t file, hid_t mem, const void* value) {
    file_type = file;
    mem_type = mem;
    space = own_space(H5Screate(H5S_SCALAR));
    data = value;
  };
  switch (a.kind) {
    case Attribute::Kind::text: {
      // Variable-length UTF-8, as h5py writes a Python str: h5py reads it back as str (fixed-length
      // strings come back as bytes, so `attrs["algorithm"] == "panels"` would be False), and
      // h5dump, HDFView, MATLAB and netCDF read it as text too.
      owned_type = own_type(H5Tcopy(H5T_C_S1));
      if (!owned_type.valid() || H5Tset_size(owned_type.get(), H5T_VARIABLE) < 0 ||
          H5Tset_cset(owned_type.get(), H5T_CSET_UTF8) < 0)
        throw_io(what);
      text_ptr = a.text.c_str();
      scalar(owned_type.get(), owned_type.get(), &text_ptr);  // a variable-length string: from a pointer to it
      break;
    }
    case Attribute::Kind::integer:
      scalar(H5T_STD_I64LE, H5T_NATIVE_INT64, &a.integer);
      break;
    case Attribute::Kind::real:
      scalar(H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &a.real);
      break;
    case Attribute::Kind::integers: {
      file_type = H5T_STD_I64LE;
      mem_type = H5T_NATIVE_INT64;
      const hsize_t n = a.integers.size();
      space = own_space(H5Screate_simple(1, &n, nullptr));
      // HDF5 wants a non-null buffer even for zero elements.
      data = a.integers.empty() ? static_cast<const void*>(&dummy) : a.integers.data();
      break;
    }
  }
  if (!space.valid()) throw_io(what);
  Handle attr = own_attr(H5Acreate2(dset, a.name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) throw_io(what);
  if (H5Awrite(attr.get(), mem_type, data) < 0) throw_io(what);
  if (attr.close() < 0) throw_io(what);
}

std::vector<std::pair<std::string, std::string>> read_attributes(const DatasetRef& ref) {
  Handle file = open_file_readonly(ref.file);
  Handle dset = open_dataset_object(file.get(), ref);

  // Creation order when the file tracks it (ours does), so attributes list as they were written.
  H5_index_t index = H5_INDEX_NAME;
  {
    Handle ocpl = own_plist(H5Dget_create_plist(dset.get()));
    unsigned crt_order = 0;
    if (ocpl.valid() && H5Pget_attr_creation_order(ocpl.get(), &crt_order) >= 0 &&
        (crt_order & H5P_CRT_ORDER_INDEXED) != 0)
      index = H5_INDEX_CRT_ORDER;
    H5Eclear2(H5E_DEFAULT);
  }
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Aiterate2(dset.get(), index, H5_ITER_INC, &idx, collect_attr_name, &names) < 0)
    throw_io("cannot list the attributes of " + in_quotes(ref));

  std::vector<std::pair<std::string, std::string>> result;
  for (const auto& name : names) {
    Handle attr = own_attr(H5Aopen(dset.get(), name.c_str(), H5P_DEFAULT));
    if (!attr.valid()) throw_io("cannot open attribute '" + name + "' of " + in_quotes(ref));
    result.emplace_back(name, attribute_text(attr.get(), in_quotes(ref)));
  }
  return result;
}

// ---- Attribute -------------------------------------------------------------------------------

Attribute Attribute::of(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::text;
  a.text = std::move(v);
  return a;
}

Attribute Attribute::of(std::string name, std::int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::integer;
  a.integer = v;
  return a;
}

Attribute Attribute::of(std::string name, double v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::real;
  a.real = v;
  return a;
}

Attribute Attribute::of(std::string name, std::vector<std::int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::integers;
  a.integers = std::move(v);
  return a;
}

}  // namespace tessera::io
