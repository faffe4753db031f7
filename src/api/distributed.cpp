// The public API's products of distributed matrices (tessera.hpp's DistributedMatrix,
// block_span and multiply(a, b, c, options, comm)) over job::multiply_distributed.
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "access.hpp"
#include "comm/comm.hpp"
#include "core/error.hpp"
#include "job/distributed_product.hpp"
#include "job/job_options.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"
#include "tessera/tessera.hpp"

namespace tessera {

DistributedMatrix::DistributedMatrix(std::int64_t rows, std::int64_t cols, int grid_rows, int grid_cols,
                                     const Matrix& local)
    : impl_(std::make_unique<Impl>(rows, cols, grid_rows, grid_cols, local)) {}
// Copies describe the same memory (the description is copied, never the matrix).
DistributedMatrix::DistributedMatrix(const DistributedMatrix& other)
    : DistributedMatrix(other.rows(), other.cols(), other.grid_rows(), other.grid_cols(), other.local()) {}
DistributedMatrix& DistributedMatrix::operator=(const DistributedMatrix& other) {
  DistributedMatrix copy(other);
  std::swap(impl_, copy.impl_);
  return *this;
}
DistributedMatrix::DistributedMatrix(DistributedMatrix&& other) noexcept = default;
DistributedMatrix& DistributedMatrix::operator=(DistributedMatrix&& other) noexcept = default;
DistributedMatrix::~DistributedMatrix() = default;

std::int64_t DistributedMatrix::rows() const noexcept { return impl_->rows; }
std::int64_t DistributedMatrix::cols() const noexcept { return impl_->cols; }
int DistributedMatrix::grid_rows() const noexcept { return impl_->grid_rows; }
int DistributedMatrix::grid_cols() const noexcept { return impl_->grid_cols; }
const Matrix& DistributedMatrix::local() const noexcept { return impl_->local; }

std::pair<std::int64_t, std::int64_t> block_span(std::int64_t extent, int parts, int index) {
  if (extent < 0 || parts < 1 || index < 0 || index >= parts)
    throw std::invalid_argument("block_span(" + std::to_string(extent) + ", " + std::to_string(parts) + ", " +
                                std::to_string(index) +
                                "): the extent must be >= 0, parts >= 1 and 0 <= index < parts");
  const partition::Range r = partition::split(extent, parts, index);
  return {r.begin, r.end};
}

namespace {
job::DistributedMatrix internal(const DistributedMatrix& x) {
  const auto& impl = Access::of(x);
  return {{impl.rows, impl.cols, impl.grid_rows, impl.grid_cols}, Access::of(impl.local)};
}
}  // namespace

Result multiply(const DistributedMatrix& a, const DistributedMatrix& b, const DistributedMatrix& c,
                const Options& options, MPI_Comm comm) {
  const double start = MPI_Wtime();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const job::RunOptions& o = Access::of(options).run;
  auto impl = std::make_shared<Access::ResultImpl>();
  try {
    const comm::Comm job_comm(comm);
    job::JobOptions jo;
    job_comm.step([&] {
      for (const auto& [name, value] : {std::pair{"a", &o.a}, {"b", &o.b}, {"c", &o.c}})
        if (!value->empty())
          throw InputError(std::string("Options ") + name + " names a dataset ('" + *value +
                           "'): the distributed matrices are the operands; leave a, b and c empty");
      jo = job::job_options(o);
    });
    const report::JobReport job = job::multiply_distributed(jo, internal(a), internal(b), internal(c), job_comm);
    impl->text = job_comm.broadcast(rank == 0 ? report::to_json(job).dump() : std::string(), 0);
    impl->report = nlohmann::json::parse(impl->text);
  } catch (const comm::JobError& e) {
    throw MultiplyError(e.what(), e.origin(), true);
  } catch (const std::exception& e) {
    throw MultiplyError(e.what(), rank, false);
  }
  impl->seconds = MPI_Wtime() - start;
  return Access::result(std::move(impl));
}

}  // namespace tessera
