#pragma once
// The report of a launch of many products (issue 42; docs/report.md, "Many products"): a row per
// product (its phases, GFLOP/s, what bounded it, or why it failed) and the launch's totals. Each
// product's own report (report.hpp's JobReport) is kept whole in the JSON.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.hpp"

namespace tessera::report {

struct ProductOutcome {
  std::string a, b, c;               // as the product names them
  std::optional<JobReport> report;   // the product ran to the end (rank 0's whole report)
  std::string error;                 // it failed: why, as the error said it
  bool committed = false;            // C is in its file (a batch: once the launch committed it)
};

struct LaunchReport {
  std::string version, started_at;
  int nranks = 1;
  bool keep_going = false;
  std::vector<ProductOutcome> products;  // in the launch's order; those never started are not in it
  int listed = 0;                        // products the launch listed
  double wall_seconds = 0;               // the launch's, from before the first product's plan
  std::vector<std::string> notes;        // how C was committed, per output file

  int failed() const;
  int committed() const;
  double flops() const;  // of the products that ran
};

nlohmann::json to_json(const LaunchReport& r);
// The table: a line per product, then the totals.
std::string format_products_table(const LaunchReport& r);

}  // namespace tessera::report
