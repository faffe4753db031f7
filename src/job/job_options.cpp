#include "job/job_options.hpp"

#include "job/plan.hpp"

namespace tessera::job {

namespace {
io::DatasetRef reference(const std::string& text) { return text.empty() ? io::DatasetRef{} : io::DatasetRef::parse(text); }
}  // namespace

JobOptions job_options(const RunOptions& o) {
  JobOptions j;
  j.asked = asked_of(o);  // every word, shape and size checked against its row first
  j.a = {reference(o.a), o.transpose_a};
  j.b = {reference(o.b), o.transpose_b};
  j.c = reference(o.c);
  j.alpha = o.alpha, j.beta = o.beta;
  j.overwrite = o.overwrite, j.quiet = o.quiet;
  j.allow_nonfinite = o.allow_nonfinite, j.fail_on_nonfinite = o.fail_on_nonfinite;
  if (o.progress != "auto") j.progress = o.progress == "on";  // one of progress_words() (checked)
  j.timeout = o.timeout;
  j.report = o.report, j.machine = o.machine;
  j.config = o.config, j.manifest = o.manifest;
  return j;
}

}  // namespace tessera::job
