// A window of a dataset after its path, "[r0:r1, c0:c1]" (io/hdf5_io.hpp's Slice): read and
// written back by DatasetRef, placed in the dataset by resolve().
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_io.hpp"

namespace tessera::io {

namespace {

std::string trimmed(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t next = s.find(sep, pos);
    parts.push_back(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) return parts;
    pos = next + 1;
  }
}

std::optional<std::int64_t> bound(const std::string& word, const std::string& whole) {
  const std::string w = trimmed(word);
  if (w.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(w.c_str(), &end, 10);
  if (end != w.c_str() + w.size() || errno == ERANGE)
    throw InputError("the window '" + whole + "': '" + w + "' is not a whole number");
  return v;
}

std::string bound_text(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : ""; }

// One axis, "a:b" with either left out.
void axis(const std::string& part, const std::string& whole, std::optional<std::int64_t>& begin,
          std::optional<std::int64_t>& end) {
  const auto colons = split(part, ':');
  if (colons.size() == 1)
    throw InputError("the window '" + whole + "': '" + trimmed(part) +
                     "' is a single index (the result would not be 2-D); write i:i+1 for one row or column");
  if (colons.size() > 2) throw InputError("the window '" + whole + "' has a step; tessera reads every row and column");
  begin = bound(colons[0], whole);
  end = bound(colons[1], whole);
}

// Resolves a numpy bound against `size`: negative counts from the end; left out is `fallback`.
std::int64_t place(const std::optional<std::int64_t>& v, std::int64_t size, std::int64_t fallback) {
  if (!v) return fallback;
  return *v < 0 ? size + *v : *v;
}

}  // namespace

// Whether `inner` (between the brackets) is written as a window at all: digits, signs, colons,
// commas and spaces. Anything else leaves the bracket to the dataset's name.
bool looks_like_slice(const std::string& inner) {
  const std::string t = trimmed(inner);
  const bool one_number = !t.empty() && t.find_first_not_of("+-0123456789") == std::string::npos &&
                          t.find_first_of("0123456789") != std::string::npos;
  if (!one_number && inner.find(':') == std::string::npos && inner.find(',') == std::string::npos) return false;
  for (const char c : inner)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == ':' || c == ',' || c == ' '))
      return false;
  return true;
}

Slice parse_slice(const std::string& inner) {
  const std::string whole = "[" + inner + "]";
  auto parts = split(inner, ',');
  Slice s;
  // A leading single index names one matrix of a 3-D dataset.
  if ((parts.size() == 1 || parts.size() == 3) && parts[0].find(':') == std::string::npos) {
    s.index = bound(parts[0], whole);
    if (!s.index) throw InputError("the window '" + whole + "': the matrix index is empty");
    parts.erase(parts.begin());
  }
  if (parts.size() != 2 && !(s.index && parts.empty()))
    throw InputError("the window '" + whole +
                     "' needs rows and columns, e.g. [0:100, :], or one matrix of a 3-D "
                     "dataset and optionally its rows and columns, e.g. [3] or [3, 0:100, :]");
  if (!parts.empty()) {
    axis(parts[0], whole, s.row_begin, s.row_end);
    axis(parts[1], whole, s.col_begin, s.col_end);
  }
  const std::string window = parts.empty() ? ""
                                           : bound_text(s.row_begin) + ":" + bound_text(s.row_end) + ", " +
                                                 bound_text(s.col_begin) + ":" + bound_text(s.col_end);
  s.text = "[" + (s.index ? std::to_string(*s.index) + (window.empty() ? "" : ", ") : "") + window + "]";
  return s;
}

std::int64_t resolve_index(const Slice& slice, std::int64_t matrices, const std::string& what) {
  const std::int64_t i = slice.index ? (*slice.index < 0 ? matrices + *slice.index : *slice.index) : 0;
  if (i < 0 || i >= matrices)
    throw InputError("the matrix " + std::to_string(slice.index.value_or(0)) + " of " + what + ": it holds " +
                     std::to_string(matrices) + " matrices (0 to " + std::to_string(matrices - 1) + ")");
  return i;
}

Window resolve(const Slice& slice, std::int64_t rows, std::int64_t cols, const std::string& what) {
  const std::int64_t r0 = place(slice.row_begin, rows, 0), r1 = place(slice.row_end, rows, rows);
  const std::int64_t c0 = place(slice.col_begin, cols, 0), c1 = place(slice.col_end, cols, cols);
  const auto outside = [&](const char* axis_name, std::int64_t b, std::int64_t e, std::int64_t size) {
    return InputError("the window " + slice.text + " of " + what + " (" + std::to_string(rows) + "x" +
                      std::to_string(cols) + "): its " + axis_name + " " + std::to_string(b) + ":" + std::to_string(e) +
                      (b >= e && b >= 0 && e <= size ? " are empty" : " lie outside 0:" + std::to_string(size)));
  };
  if (r0 < 0 || r1 > rows || r0 >= r1) throw outside("rows", r0, r1, rows);
  if (c0 < 0 || c1 > cols || c0 >= c1) throw outside("columns", c0, c1, cols);
  return {r0, r1 - r0, c0, c1 - c0};
}

}  // namespace tessera::io
