#pragma once
// Which GPU kernel the CUDA backend runs: the name given, or for `--kernel auto` the tuned winner
// from this GPU's tune file (backend/tuning.hpp; cuBLAS among the candidates), else the built-in
// choice, cuBLAS. Internal to the backend.
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/tuning.hpp"
#include "core/dtype.hpp"

namespace tessera::backend {

class KernelChoice {
 public:
  // Reads the tune file of `device`, if any; choices naming kernels this build does not have (or
  // may not choose) are ignored, each with a line in `warnings`.
  KernelChoice(int device, std::vector<std::string>* warnings);

  // What `auto` means when the problem is not known yet (the pipeline asks before it has
  // partitioned): the choice for the largest tuned float32 size, else the built-in default.
  std::string default_kernel() const;
  // `auto` for one GEMM: the tuned choice of the nearest tuned size of this dtype and row
  // alignment (tuned_choice), decided for the whole job (whole_job_kernel: a library's load
  // counted against its kernel's time, unless this process has loaded it), if it can run the
  // problem; else the built-in default. Over a `process` horizon the load counts nothing.
  std::string resolve(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                      LoadHorizon horizon = LoadHorizon::job) const;

 private:
  TuneTable tuned_;
};

}  // namespace tessera::backend
