#pragma once
// What run_job (job/pipeline.cpp) has settled before it hands a job to the ksplit or summa
// algorithm.
#include <cstdint>
#include <memory>

#include "core/dtype.hpp"
#include "io/hdf5_io.hpp"
#include "partition/partition.hpp"
#include "report/report.hpp"

namespace tessera::job {

struct JobStart {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f64;
  partition::GridShape grid;                      // the chosen or given process grid
  std::unique_ptr<io::MatrixWriter> writer;  // rank 0 only
  double started = 0;                        // MPI_Wtime() when run_job began
  report::JobReport job;                     // filled up to the inputs
};

}  // namespace tessera::job
