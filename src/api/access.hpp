#pragma once
// Inside libtessera: what the public classes (include/tessera/tessera.hpp) hold behind their one
// pointer, and the way the API's functions reach it.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/memory_product.hpp"
#include "job/run_job.hpp"
#include "report/report.hpp"
#include "tessera/tessera.hpp"

namespace tessera {

struct Options::Impl {
  job::RunOptions run;             // the options as the job layer takes them (`tessera run`'s)
  std::string log_level;           // "": the library's default (warn)
  std::vector<std::string> given;  // the names set, in the order first set (the report's provenance)

  // Inline, so that they stay inside libtessera (hidden inlines; libtessera.map exports Options::*).
  Impl() {
    run.quiet = true;  // a library prints nothing unless asked
    run.progress = "off";
  }
  void give(const std::string& name) {
    for (const auto& g : given)
      if (g == name) return;
    given.push_back(name);
  }
};

struct Result::Impl {
  double seconds = 0;  // this rank's call
  // rank 0's report, as JSON text and parsed; a product in memory leaves them to `job`, made into
  // JSON at the first accessor that reads them (a loop of small products that never looks at
  // its reports pays neither: about half of a 64^3 product's own time on the CPU)
  mutable std::string text;
  mutable nlohmann::json report;
  std::unique_ptr<report::JobReport> job;
  mutable std::once_flag made;

  const nlohmann::json& parsed() const {
    made_once();
    return report;
  }
  const std::string& dumped() const {
    made_once();
    return text;
  }

 private:
  void made_once() const {
    std::call_once(made, [this] {
      if (!job) return;
      report = report::to_json(*job);
      text = report.dump();
    });
  }
};

struct Matrix::Impl {
  job::MemoryMatrix m;
};

struct DistributedMatrix::Impl {
  std::int64_t rows = 0, cols = 0;
  int grid_rows = 1, grid_cols = 1;
  Matrix local;
  Impl(std::int64_t r, std::int64_t c, int gr, int gc, const Matrix& m)
      : rows(r), cols(c), grid_rows(gr), grid_cols(gc), local(m) {}
};

struct Plan::Impl {
  std::string text, json;
  nlohmann::json plan;
};

struct Access {
  using ResultImpl = Result::Impl;
  using PlanImpl = Plan::Impl;
  using MatrixImpl = Matrix::Impl;
  static const Options::Impl& of(const Options& o) { return *o.impl_; }
  static const job::MemoryMatrix& of(const Matrix& m) { return m.impl_->m; }
  static const DistributedMatrix::Impl& of(const DistributedMatrix& m) { return *m.impl_; }
  static Options::Impl& edit(Options& o) { return *o.impl_; }
  static Result result(std::shared_ptr<const Result::Impl> impl) {
    Result r;
    r.impl_ = std::move(impl);
    return r;
  }
  static Plan plan(std::shared_ptr<const Plan::Impl> impl) {
    Plan p;
    p.impl_ = std::move(impl);
    return p;
  }
};

// The options given, by their `tessera run` names, as text (the report's provenance "options").
nlohmann::json options_given(const Options& o);

}  // namespace tessera
