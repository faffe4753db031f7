#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

// Element type of a computation. Inputs of other types are converted on read (see io/).
enum class DType { f32, f64 };

inline const char* dtype_name(DType t) { return t == DType::f32 ? "float32" : "float64"; }
inline std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 8; }

// The names a user gives a dtype (--dtype, the tune files): "f32" or "float32", "f64" or
// "float64". False for another name (the caller refuses it, naming its option and choices).
inline bool parse_dtype(const std::string& text, DType* out) {
  if (text == "f32" || text == "float32") {
    *out = DType::f32;
    return true;
  }
  if (text == "f64" || text == "float64") {
    *out = DType::f64;
    return true;
  }
  return false;
}

// The names the options offer (completion, --help-json); parse_dtype also takes float32, float64.
inline std::vector<std::string> dtype_words() { return {"f32", "f64"}; }

// Unit roundoff u = eps/2 of the type.
inline double unit_roundoff(DType t) { return t == DType::f32 ? 0x1p-24 : 0x1p-53; }

// Componentwise forward-error bound of a length-k dot product, gamma_k = k*u / (1 - k*u)
// (Higham, Accuracy and Stability of Numerical Algorithms, sec. 3.1):
// |C - fl(A*B)| <= gamma_k * (|A| |B|) elementwise, for any summation order.
inline double gamma_bound(DType t, long long k) {
  const double ku = static_cast<double>(k) * unit_roundoff(t);
  return ku < 1.0 ? ku / (1.0 - ku) : 1.0;
}

}  // namespace tessera
