// tessera._native: numpy arrays into libtessera's multiply of matrices in memory
// (tessera::multiply(Matrix, Matrix, Matrix, Options)); tessera.matmul (python/src/tessera/
// matmul.py) is the Python face of it. An array is used where it lies when its rows are evenly
// strided with adjacent elements (C order, or a row slice of one), or its columns are (Fortran
// order, such as a.T of a C-ordered array: passed as the stored matrix with op = transpose);
// anything else is copied first. The GIL is released while tessera multiplies. Matrices in GPU
// memory arrive as addresses (matmul_device_*: tessera.matmul reads them from the torch or cupy
// tensor) and are used there, ordered on the caller's stream.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tessera/tessera.hpp"

namespace py = pybind11;

namespace {

// The last call's report, for tessera.matmul's last_report(): kept as the Result, whose JSON is
// made only when asked for (a loop of small products never pays for it).
tessera::Result& last_report() {
  static tessera::Result result;
  return result;
}

// How an array reaches tessera: the matrix as stored, and whether op is its transpose.
struct Operand {
  py::array kept;  // the array whose memory the matrix describes (the argument, or a copy)
  std::int64_t rows = 0, cols = 0, ld = 0;
  bool transposed = false;
};

template <class T>
Operand operand(py::array x, const char* name) {
  if (x.ndim() != 2)
    throw py::value_error(std::string(name) + " must be a 2-D array (it has " + std::to_string(x.ndim()) +
                          " dimensions)");
  const auto es = static_cast<py::ssize_t>(sizeof(T));
  const py::ssize_t r = x.shape(0), c = x.shape(1), s0 = x.strides(0), s1 = x.strides(1);
  if ((s1 == es || c <= 1) && s0 > 0 && s0 % es == 0 && s0 / es >= c) return {x, r, c, s0 / es, false};
  if ((s0 == es || r <= 1) && s1 > 0 && s1 % es == 0 && s1 / es >= r) return {x, c, r, s1 / es, true};
  py::array copy = py::array_t<T, py::array::c_style>(x);
  return {copy, r, c, c, false};
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  if constexpr (std::is_same_v<T, double>) return "float64";
  if constexpr (std::is_same_v<T, std::complex<float>>) return "complex64";
  return "complex128";
}

// op 'N', 'T' or 'C' (the conjugate transpose) of an operand.
bool transposes(char op) { return op == 'T' || op == 'C'; }

template <class T>
py::array matmul(py::array a, py::array b, py::object c, std::complex<double> alpha, std::complex<double> beta,
                 char op_a, char op_b, const std::string& kernel, const std::string& backend, bool allow_nonfinite) {
  for (const char op : {op_a, op_b})
    if (op != 'N' && op != 'T' && op != 'C') throw py::value_error(std::string("op must be N, T or C, not ") + op);
  Operand oa = operand<T>(a, "a"), ob = operand<T>(b, "b");
  // A conjugate that is no transpose of the stored matrix (a.T asked conjugated) is no BLAS op:
  // the array copied in C order, so that op(X) is X^H.
  const auto stored_as_is = [](Operand& x, const py::array& given, char op) {
    if (op == 'C' && x.transposed)
      x = {py::array_t<T, py::array::c_style>(given), given.shape(0), given.shape(1), given.shape(1), false};
  };
  stored_as_is(oa, a, op_a);
  stored_as_is(ob, b, op_b);
  const bool transpose_a = transposes(op_a), transpose_b = transposes(op_b);
  // op as asked, composed with how the array is laid out.
  const bool ta = transpose_a != oa.transposed, tb = transpose_b != ob.transposed;
  const std::int64_t m = transpose_a ? a.shape(1) : a.shape(0), k = transpose_a ? a.shape(0) : a.shape(1);
  const std::int64_t kb = transpose_b ? b.shape(1) : b.shape(0), n = transpose_b ? b.shape(0) : b.shape(1);
  if (k != kb)
    throw py::value_error("inner dimensions disagree: op(a) is " + std::to_string(m) + "x" + std::to_string(k) +
                          " but op(b) is " + std::to_string(kb) + "x" + std::to_string(n));
  // C: the `c` given (written in place: a C-ordered float array of the shape), or a new array.
  py::array_t<T, py::array::c_style> out;
  if (c.is_none()) {
    out = py::array_t<T, py::array::c_style>({m, n});
    beta = 0;  // a new C holds nothing to add
  } else {
    const py::array given = py::reinterpret_borrow<py::array>(c);
    if (!py::isinstance<py::array_t<T>>(given) || !(given.flags() & py::array::c_style) || !given.writeable())
      throw py::value_error(std::string("c must be a writable C-ordered array of ") + type_name<T>());
    if (given.ndim() != 2 || given.shape(0) != m || given.shape(1) != n)
      throw py::value_error("c must be " + std::to_string(m) + "x" + std::to_string(n));
    out = py::reinterpret_borrow<py::array_t<T, py::array::c_style>>(given);
  }
  tessera::Options o;
  o.transpose_a(ta).transpose_b(tb).kernel(kernel).backend(backend).allow_nonfinite(allow_nonfinite);
  o.conjugate_a(op_a == 'C').conjugate_b(op_b == 'C');
  if (alpha.imag() == 0 && beta.imag() == 0)
    o.alpha(alpha.real()).beta(beta.real());
  else
    o.alpha(alpha).beta(beta);
  const tessera::Matrix ma(static_cast<const T*>(oa.kept.data()), oa.rows, oa.cols, oa.ld);
  const tessera::Matrix mb(static_cast<const T*>(ob.kept.data()), ob.rows, ob.cols, ob.ld);
  const tessera::Matrix mc(out.mutable_data(), m, n);
  {
    py::gil_scoped_release unlocked;
    last_report() = tessera::multiply(ma, mb, mc, o);
  }
  return std::move(out);
}

// A matrix in GPU memory as tessera.matmul found it (a torch or cupy tensor, __cuda_array_interface__):
// its address, shape as stored, leading dimension, and whether op is its transpose.
struct DeviceOperand {
  std::uintptr_t data = 0;
  std::int64_t rows = 0, cols = 0, ld = 0;
  bool transposed = false;
};

template <class T>
void matmul_device(const DeviceOperand& a, const DeviceOperand& b, std::uintptr_t c, std::int64_t m, std::int64_t n,
                   std::int64_t ldc, double alpha, double beta, const std::string& kernel, bool allow_nonfinite,
                   std::uintptr_t stream) {
  tessera::Options o;
  o.transpose_a(a.transposed).transpose_b(b.transposed).alpha(alpha).beta(beta).kernel(kernel).backend("cuda");
  o.allow_nonfinite(allow_nonfinite);
  using tessera::Memory;
  const tessera::Matrix ma(reinterpret_cast<const T*>(a.data), a.rows, a.cols, a.ld, Memory::device);
  const tessera::Matrix mb(reinterpret_cast<const T*>(b.data), b.rows, b.cols, b.ld, Memory::device);
  const tessera::Matrix mc(reinterpret_cast<T*>(c), m, n, ldc, Memory::device);
  py::gil_scoped_release unlocked;
  last_report() = tessera::multiply(ma, mb, mc, o, reinterpret_cast<void*>(stream));
}

// A rank's blocks of distributed matrices (numpy arrays) over an mpi4py communicator (its MPI_Comm
// handle, MPI._handleof(comm)): tessera::multiply(DistributedMatrix...). Each grid is (global
// rows, global cols, grid rows, grid cols) of the matrix as stored.
using GridOf = std::tuple<std::int64_t, std::int64_t, int, int>;

template <class T>
py::array matmul_blocks(py::array a, GridOf ga, py::array b, GridOf gb, py::array c, GridOf gc,
                        std::complex<double> alpha, std::complex<double> beta, char op_a, char op_b,
                        const std::string& kernel, const std::string& backend, bool allow_nonfinite,
                        std::uintptr_t comm) {
  for (const char op : {op_a, op_b})
    if (op != 'N' && op != 'T' && op != 'C') throw py::value_error(std::string("op must be N, T or C, not ") + op);
  const auto block = [](py::array x, const char* name) {
    if (x.ndim() != 2) throw py::value_error(std::string(name) + "'s block must be a 2-D array");
    const auto es = static_cast<py::ssize_t>(sizeof(T));
    const py::ssize_t r = x.shape(0), cols = x.shape(1), s0 = x.strides(0), s1 = x.strides(1);
    if (!((s1 == es || cols <= 1) && (s0 > 0 || r <= 1) && s0 % es == 0 && (r <= 1 || s0 / es >= cols)))
      throw py::value_error(std::string(name) + "'s block must have its rows packed (C order, or a row slice of it)");
    return std::pair<std::int64_t, std::int64_t>{r, r <= 1 ? std::max<py::ssize_t>(cols, 1) : s0 / es};
  };
  const auto [ar, lda] = block(a, "a");
  const auto [br, ldb] = block(b, "b");
  const auto [cr, ldc] = block(c, "c");
  (void)ar, (void)br, (void)cr;
  const auto described = [](const GridOf& g, const tessera::Matrix& local) {
    return tessera::DistributedMatrix(std::get<0>(g), std::get<1>(g), std::get<2>(g), std::get<3>(g), local);
  };
  py::array_t<T> out = py::reinterpret_borrow<py::array_t<T>>(c);
  const tessera::Matrix ma(static_cast<const T*>(a.data()), a.shape(0), a.shape(1),
                           std::max<std::int64_t>(lda, a.shape(1)));
  const tessera::Matrix mb(static_cast<const T*>(b.data()), b.shape(0), b.shape(1),
                           std::max<std::int64_t>(ldb, b.shape(1)));
  const tessera::Matrix mc(out.mutable_data(), c.shape(0), c.shape(1), std::max<std::int64_t>(ldc, c.shape(1)));
  tessera::Options o;
  o.transpose_a(op_a == 'T').transpose_b(op_b == 'T').conjugate_a(op_a == 'C').conjugate_b(op_b == 'C');
  o.kernel(kernel).backend(backend).allow_nonfinite(allow_nonfinite);
  if (alpha.imag() == 0 && beta.imag() == 0)
    o.alpha(alpha.real()).beta(beta.real());
  else
    o.alpha(alpha).beta(beta);
  {
    py::gil_scoped_release unlocked;
    last_report() =
        tessera::multiply(described(ga, ma), described(gb, mb), described(gc, mc), o, reinterpret_cast<MPI_Comm>(comm));
  }
  return c;
}

}  // namespace

PYBIND11_MODULE(_native, mod) {
  mod.doc() = "tessera's multiply of matrices in memory (libtessera); use tessera.matmul";
  py::register_exception<tessera::MultiplyError>(mod, "MultiplyError", PyExc_RuntimeError);
  for (const auto& [name, run] : {std::pair{"matmul_f32", &matmul<float>},
                                  {"matmul_f64", &matmul<double>},
                                  {"matmul_c64", &matmul<std::complex<float>>},
                                  {"matmul_c128", &matmul<std::complex<double>>}})
    mod.def(name, run, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"), py::arg("beta"), py::arg("op_a"),
            py::arg("op_b"), py::arg("kernel"), py::arg("backend"), py::arg("allow_nonfinite"));
  py::class_<DeviceOperand>(mod, "DeviceOperand")
      .def(py::init([](std::uintptr_t data, std::int64_t rows, std::int64_t cols, std::int64_t ld, bool transposed) {
             return DeviceOperand{data, rows, cols, ld, transposed};
           }),
           py::arg("data"), py::arg("rows"), py::arg("cols"), py::arg("ld"), py::arg("transposed"));
  for (const auto& [name, run] :
       {std::pair{"matmul_device_f32", &matmul_device<float>}, {"matmul_device_f64", &matmul_device<double>}})
    mod.def(name, run, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("m"), py::arg("n"), py::arg("ldc"),
            py::arg("alpha"), py::arg("beta"), py::arg("kernel"), py::arg("allow_nonfinite"), py::arg("stream"));
  for (const auto& [name, run] :
       {std::pair{"matmul_blocks_f32", &matmul_blocks<float>}, {"matmul_blocks_f64", &matmul_blocks<double>},
        {"matmul_blocks_c64", &matmul_blocks<std::complex<float>>},
        {"matmul_blocks_c128", &matmul_blocks<std::complex<double>>}})
    mod.def(name, run, py::arg("a"), py::arg("grid_a"), py::arg("b"), py::arg("grid_b"), py::arg("c"),
            py::arg("grid_c"), py::arg("alpha"), py::arg("beta"), py::arg("transpose_a"), py::arg("transpose_b"),
            py::arg("kernel"), py::arg("backend"), py::arg("allow_nonfinite"), py::arg("comm"));
  mod.def("block_span", [](std::int64_t extent, int parts, int index) {
    try {
      return tessera::block_span(extent, parts, index);
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  });
  mod.def("version", [] { return std::string(tessera::version()); });
  mod.def("last_report", [] { return last_report().json(); });
}
