// The public API's products of matrices in memory (tessera.hpp's Matrix and multiply(a, b, c,
// options)) over job::multiply_in_memory.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "access.hpp"
#include "core/error.hpp"
#include "job/job_options.hpp"
#include "job/memory_product.hpp"
#include "report/report.hpp"
#include "tessera/tessera.hpp"

namespace tessera {

namespace {
std::unique_ptr<Access::MatrixImpl> described(DType dtype, const void* data, void* out, std::int64_t rows,
                                              std::int64_t cols, std::int64_t ld, Memory where = Memory::host) {
  auto impl = std::make_unique<Access::MatrixImpl>();
  impl->m = {dtype, rows, cols, ld == 0 ? cols : ld, data, out, where == Memory::device};
  return impl;
}

Result multiply_on(const Matrix& a, const Matrix& b, const Matrix& c, const Options& options,
                   const job::MemoryCall& call) {
  const auto began = std::chrono::steady_clock::now();
  const job::RunOptions& o = Access::of(options).run;
  auto impl = std::make_shared<Access::ResultImpl>();
  try {
    for (const auto& [name, value] : {std::pair{"a", &o.a}, {"b", &o.b}, {"c", &o.c}})
      if (!value->empty())
        throw InputError(std::string("Options ") + name + " names a dataset ('" + *value +
                         "'): the matrices in memory are the operands; leave a, b and c empty");
    const job::JobOptions jo = job::job_options(o);
    impl->job = std::make_unique<report::JobReport>(
        job::multiply_in_memory(jo, Access::of(a), Access::of(b), Access::of(c), call));
  } catch (const std::exception& e) {
    throw MultiplyError(e.what(), 0, true);
  }
  impl->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return Access::result(std::move(impl));
}
}  // namespace

Matrix::Matrix(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : impl_(described(DType::f32, data, nullptr, rows, cols, ld)) {}
Matrix::Matrix(const double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : impl_(described(DType::f64, data, nullptr, rows, cols, ld)) {}
Matrix::Matrix(float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : impl_(described(DType::f32, data, data, rows, cols, ld)) {}
Matrix::Matrix(double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : impl_(described(DType::f64, data, data, rows, cols, ld)) {}
Matrix::Matrix(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::f32, data, nullptr, rows, cols, ld, where)) {}
Matrix::Matrix(const double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::f64, data, nullptr, rows, cols, ld, where)) {}
Matrix::Matrix(float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::f32, data, data, rows, cols, ld, where)) {}
Matrix::Matrix(double* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::f64, data, data, rows, cols, ld, where)) {}
Matrix::Matrix(const std::complex<float>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::c64, data, nullptr, rows, cols, ld, where)) {}
Matrix::Matrix(const std::complex<double>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::c128, data, nullptr, rows, cols, ld, where)) {}
Matrix::Matrix(std::complex<float>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::c64, data, data, rows, cols, ld, where)) {}
Matrix::Matrix(std::complex<double>* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, Memory where)
    : impl_(described(DType::c128, data, data, rows, cols, ld, where)) {}
Matrix::Matrix(const Matrix& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Matrix::Matrix(Matrix&& other) noexcept = default;
Matrix& Matrix::operator=(const Matrix& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
Matrix& Matrix::operator=(Matrix&& other) noexcept = default;
Matrix::~Matrix() = default;

std::int64_t Matrix::rows() const noexcept { return impl_->m.rows; }
std::int64_t Matrix::cols() const noexcept { return impl_->m.cols; }
std::int64_t Matrix::ld() const noexcept { return impl_->m.ld; }
std::string Matrix::dtype() const { return dtype_name(impl_->m.dtype); }
bool Matrix::writable() const noexcept { return impl_->m.out != nullptr; }
Memory Matrix::memory() const noexcept { return impl_->m.device ? Memory::device : Memory::host; }

Result multiply(const Matrix& a, const Matrix& b, const Matrix& c, const Options& options) {
  return multiply_on(a, b, c, options, {});
}

Result multiply(const Matrix& a, const Matrix& b, const Matrix& c, const Options& options, void* cuda_stream) {
  return multiply_on(a, b, c, options, {cuda_stream, cuda_stream == nullptr});
}

}  // namespace tessera
