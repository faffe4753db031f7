#pragma once
// Many products in one launch (issue 42; docs/usage.md, "Many products in one launch"): a manifest's
// [[product]] tables, or --a/--b/--c with wildcards over the groups of a file (job/products.hpp).
// MPI and each rank's backend (the CUDA context, cuBLAS, the kernels' warm-up) start once; each
// product then runs the whole job harness (job/job.hpp: plan, read, compute, verify, write) as a
// single product would, and C's of a new output file are committed together, once, after the last
// product (io::OutputBatch: one fsync and one rename for the file, none of its results visible
// before all are, nothing of them left by a kill); C's into an existing file are committed each as
// its product ends, through the file's rollback journal. A failed product is named; the products
// before it are committed and reported, and with --keep-going those after it run too.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "comm/comm.hpp"
#include "io/hdf5_io.hpp"
#include "job/run_options.hpp"
#include "report/report.hpp"

namespace tessera::job {

// What the products of one launch share.
class Launch {
 public:
  explicit Launch(bool overwrite) : overwrite_(overwrite) {}

  // Rank 0, as a product's plan makes its writer: the batch its C goes into (one per new output
  // file), or null where the file exists (the product commits its own C, through the journal).
  io::OutputBatch* batch_for(const std::string& file);
  // Rank 0, at the end of the list: every batch made durable and put in place; the files committed.
  std::vector<std::string> commit_batches();
  bool batched(const std::string& file) const { return batches_.count(file) > 0; }

  // This rank's backend, kept from its product before (null: none yet, or that product failed).
  std::unique_ptr<backend::Backend> take_backend() { return std::move(backend_); }
  // A product ran to the end: its report (whole on rank 0) and the rank's backend, for the next.
  void finished(const report::JobReport& job, std::unique_ptr<backend::Backend> be) {
    last_ = job;
    backend_ = std::move(be);
  }
  const report::JobReport& last() const { return last_; }

 private:
  bool overwrite_;
  std::map<std::string, std::unique_ptr<io::OutputBatch>> batches_;
  std::unique_ptr<backend::Backend> backend_;
  report::JobReport last_;
};

// Whether `o` names many products: a manifest, or a wildcard in --a.
bool many_products(const RunOptions& o);
// The products `o` names (the manifest's, or the pattern's matches: reads the file), not checked.
std::vector<Product> listed_products(const RunOptions& o);
// The options of one product: the launch's, with the product's operands and its manifest values.
RunOptions product_options(const RunOptions& o, const Product& p);

// Collective: every product of `o`, in order (run_job's many-product form). Throws comm::JobError
// naming the first failed product once the products before it (and with --keep-going, after it)
// are committed and reported; with `report_json`, the launch's report is left there.
void run_products(const RunOptions& o, const comm::Comm& comm, std::string* report_json);

}  // namespace tessera::job
