#include "job/job_options.hpp"

#include "backend/backend.hpp"
#include "comm/path.hpp"
#include "core/dtype.hpp"
#include "core/env.hpp"
#include "partition/partition.hpp"

namespace tessera::job {

namespace {

int bands_asked() { return static_cast<int>(env::whole("TESSERA_BANDS").value_or(0)); }

}  // namespace

algorithms::Asked asked_of(const RunOptions& o) {
  check_run_options(o);  // every word, shape and size against its row (job/run_options.hpp)
  algorithms::Asked r;
  r.algorithm = o.algorithm;  // a name of the registry's, or auto (checked above)
  r.backend = backend::parse_kind(o.backend);
  if (o.dtype != "auto") {
    r.dtype = DType::f64;
    (void)parse_dtype(o.dtype, &*r.dtype);  // one of dtype_words() (checked above)
  }
  r.comm = comm::parse_path(o.comm);
  r.kernel = o.kernel;
  r.write = algorithms::parse_write_route(o.write);
  r.panel_width = o.panel_width;
  r.gpu_memory = static_cast<std::int64_t>(parse_bytes(o.gpu_memory, "--gpu-memory"));
  r.baseline = o.baseline;
  r.verify = o.verify;
  if (!o.grid.empty()) r.grid = partition::parse_grid(o.grid);
  r.bands = bands_asked();
  return r;
}

namespace {
io::DatasetRef reference(const std::string& text) {
  return text.empty() ? io::DatasetRef{} : io::DatasetRef::parse(text);
}
}  // namespace

JobOptions job_options(const RunOptions& o) {
  JobOptions j;
  j.asked = asked_of(o);  // every word, shape and size checked against its row first
  j.a = {reference(o.a), o.transpose_a || o.conjugate_a, o.conjugate_a};
  j.b = {reference(o.b), o.transpose_b || o.conjugate_b, o.conjugate_b};
  j.c = reference(o.c);
  j.alpha = o.alpha, j.beta = o.beta;
  j.alpha_imag = o.alpha_imag, j.beta_imag = o.beta_imag;
  j.conjugate_a = o.conjugate_a, j.conjugate_b = o.conjugate_b;
  j.overwrite = o.overwrite, j.quiet = o.quiet;
  j.c_dtype = o.c_dtype;
  j.allow_nonfinite = o.allow_nonfinite, j.fail_on_nonfinite = o.fail_on_nonfinite;
  if (o.progress != "auto") j.progress = o.progress == "on";  // one of progress_words() (checked)
  j.timeout = o.timeout;
  j.report = o.report, j.machine = o.machine;
  j.config = o.config, j.manifest = o.manifest;
  return j;
}

}  // namespace tessera::job
