#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

// Element type of a computation. Inputs of other types are converted on read (see io/).
// c64 and c128 (complex64, complex128: a real and an imaginary part of float, of double, side by
// side as std::complex and numpy store them) are the element types of complex matrices in memory
// (job/memory_product.hpp) and in files (h5py's compound of r and i); the CLI's --dtype names the
// precision (f32: complex64 for complex inputs), and the kernels' registries take f32 and f64
// (a complex product runs through the BLAS's or cuBLAS's complex GEMM).
enum class DType { f32, f64, c64, c128 };

inline bool is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
// The type of one part: f32 for c64, f64 for c128, the type itself for a real one.
inline DType real_of(DType t) { return t == DType::c64 ? DType::f32 : t == DType::c128 ? DType::f64 : t; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::c64:
      return "complex64";
    case DType::c128:
      return "complex128";
  }
  return "?";
}
inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::c64:
      return 8;
    case DType::c128:
      return 16;
  }
  return 0;
}

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

// The short name of every dtype ("f32", "f64", "c64", "c128"), as plans and journals carry it
// between ranks; parse_any_dtype reads it back (false for another word).
inline const char* dtype_word(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::c64:
      return "c64";
    case DType::c128:
      return "c128";
  }
  return "?";
}
inline bool parse_any_dtype(const std::string& text, DType* out) {
  for (const DType t : {DType::f32, DType::f64, DType::c64, DType::c128})
    if (text == dtype_word(t)) {
      *out = t;
      return true;
    }
  return false;
}

// The names the options offer (completion, --help-json); parse_dtype also takes float32, float64.
inline std::vector<std::string> dtype_words() { return {"f32", "f64"}; }

// Real multiply-adds per multiply-add of `t`: 4 for a complex one (a GEMM of m x n x k complex
// numbers does 8mnk floating-point operations, 2mnk for real ones).
inline double real_work(DType t) { return is_complex(t) ? 4.0 : 1.0; }

// Unit roundoff u = eps/2 of the type (of its parts for a complex one).
inline double unit_roundoff(DType t) { return real_of(t) == DType::f32 ? 0x1p-24 : 0x1p-53; }

// Componentwise forward-error bound of a length-k dot product, gamma_k = k*u / (1 - k*u)
// (Higham, Accuracy and Stability of Numerical Algorithms, sec. 3.1):
// |C - fl(A*B)| <= gamma_k * (|A| |B|) elementwise, for any summation order.
inline double gamma_bound(DType t, long long k) {
  const double ku = static_cast<double>(k) * unit_roundoff(t);
  return ku < 1.0 ? ku / (1.0 - ku) : 1.0;
}

}  // namespace tessera
