// Many products in one launch (job/launch.hpp): the list, each product's run of the harness, the
// output batches committed at the end, one report.
#include "job/launch.hpp"

#include <mpi.h>
#include <sys/stat.h>

#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/atomic_file.hpp"
#include "io/dataset_pattern.hpp"
#include "job/job.hpp"
#include "job/job_paths.hpp"
#include "job/repeats.hpp"
#include "job/result.hpp"
#include "report/products.hpp"
#include "report/provenance.hpp"

namespace tessera::job {

io::OutputBatch* Launch::batch_for(const std::string& file) {
  if (const auto it = batches_.find(file); it != batches_.end()) return it->second.get();
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) return nullptr;  // an existing file: each C through its journal
  return batches_.emplace(file, std::make_unique<io::OutputBatch>(file, overwrite_)).first->second.get();
}

std::vector<std::string> Launch::commit_batches() {
  std::vector<std::string> committed;
  for (auto& [file, batch] : batches_) {
    if (batch->results() == 0) continue;
    batch->commit();
    committed.push_back(file);
  }
  return committed;
}

bool many_products(const RunOptions& o) {
  if (!o.manifest.empty()) return true;
  try {
    return !o.a.empty() && io::wildcard_levels(io::DatasetRef::parse(o.a).path) > 0;
  } catch (const InputError&) {
    return false;  // no dataset reference: the one product's plan refuses it, on every rank at once
  }
}

std::vector<Product> listed_products(const RunOptions& o) {
  return o.manifest.empty() ? expand_products(o.a, o.b, o.c) : o.listed;
}

RunOptions product_options(const RunOptions& o, const Product& p) {
  RunOptions po = o;
  po.a = p.a, po.b = p.b, po.c = p.c;
  if (p.transpose_a) po.transpose_a = *p.transpose_a;
  if (p.transpose_b) po.transpose_b = *p.transpose_b;
  if (p.alpha) po.alpha = *p.alpha;
  if (p.beta) po.beta = *p.beta;
  if (p.conjugate_a) po.conjugate_a = *p.conjugate_a;
  if (p.conjugate_b) po.conjugate_b = *p.conjugate_b;
  if (p.alpha_imag) po.alpha_imag = *p.alpha_imag;
  if (p.beta_imag) po.beta_imag = *p.beta_imag;
  po.listed.clear();  // (the manifest stays: a file the products only read)
  return po;
}

namespace {

// Rank 0 lists the products (a pattern is matched against the file) and checks every path of the
// list (the launch's report is written whatever the products do); every rank learns them.
std::vector<Product> list_products(const RunOptions& o, const comm::Comm& comm,
                                   std::unique_ptr<io::FileReservation>& report) {
  nlohmann::json listed = nlohmann::json::array();
  comm.step([&] {
    if (o.repeat > 1 || o.warmup.value_or(0) > 0)
      throw InputError("--repeat and --warmup time one product; many products in one launch take neither");
    if (comm.rank() != kRoot) return;
    const std::vector<Product> products = listed_products(o);
    if (products.empty()) throw InputError("--manifest '" + o.manifest + "' lists no [[product]]");
    (void)guard_launch_paths(o, products);
    report = reserve_report(o.report, comm.size() * static_cast<int>(products.size()));
    for (const Product& p : products) listed.push_back(p.to_json());
  });
  listed = nlohmann::json::parse(comm.broadcast(listed.dump(), kRoot));
  std::vector<Product> products;
  for (const auto& j : listed) products.push_back(Product::from_json(j));
  return products;
}

// How the launch ends: the first failure, named, as the kind of error it was (exit 1, or 3 for a
// verification), once everything that could be committed is.
[[noreturn]] void fail(const report::LaunchReport& r, bool verification, int origin) {
  std::string first;
  int index = 0;
  for (std::size_t i = 0; i < r.products.size(); ++i)
    if (!r.products[i].report) {
      first = r.products[i].error;
      index = static_cast<int>(i) + 1;
      break;
    }
  const std::string named = "product " + std::to_string(index) + " of " + std::to_string(r.listed) + " (" +
                            r.products[index - 1].c + "): " + first;
  const int failed = r.failed();
  std::string rest = "; " + std::to_string(r.committed()) + " product(s) committed";
  if (failed > 1) rest = "; " + std::to_string(failed) + " products failed (see the report)" + rest;
  if (static_cast<int>(r.products.size()) < r.listed)
    rest +=
        ", " + std::to_string(r.listed - static_cast<int>(r.products.size())) + " not started (--keep-going runs them)";
  if (verification) throw VerificationFailed(named + rest);
  throw comm::JobError(named + rest, origin);
}

}  // namespace

void run_products(const RunOptions& o, const comm::Comm& comm, std::string* report_json) {
  const double began = MPI_Wtime();
  std::unique_ptr<io::FileReservation> report_file;  // rank 0: the report's space, taken up front
  const std::vector<Product> products = list_products(o, comm, report_file);
  const bool root = comm.rank() == kRoot;
  Launch launch(o.overwrite);
  report::LaunchReport r;
  r.version = kVersion;
  r.started_at = report::utc_timestamp();
  r.nranks = comm.size();
  r.keep_going = o.keep_going;
  r.listed = static_cast<int>(products.size());
  bool verification = false;
  int origin = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    const RunOptions po = product_options(o, products[i]);
    if (root && !o.quiet) {
      std::printf("tessera: product %zu of %zu: %s\n", i + 1, products.size(), po.c.c_str());
      std::fflush(stdout);
    }
    report::ProductOutcome outcome{po.a, po.b, po.c, std::nullopt, "", false};
    try {
      JobOptions jo;
      comm.step([&] { jo = job_options(po); });
      RunSeries series(po, began);  // the process's start-up: up to the launch's start
      Job(jo, comm, series, 0, nullptr, &launch).run();
      outcome.report = launch.last();
      if (i > 0)  // the process started once, before the first product: not a phase of the others
        for (auto& rank : outcome.report->ranks) rank.startup_seconds = -1;
      outcome.committed = !launch.batched(io::DatasetRef::parse(po.c).file);  // else: at the end
    } catch (const VerificationFailed& e) {
      outcome.error = e.what();
      verification = r.failed() == 0 || verification;
    } catch (const comm::JobError& e) {
      outcome.error = e.what();
      if (r.failed() == 0) origin = e.origin();
    }
    r.products.push_back(std::move(outcome));
    if (!r.products.back().report && !o.keep_going) break;
  }
  // The new files, each committed once (a failure here is every rank's: nothing of that file is kept).
  std::vector<std::string> committed;
  comm.step([&] {
    if (root) committed = launch.commit_batches();
  });
  for (auto& p : r.products)
    if (p.report && launch.batched(io::DatasetRef::parse(p.c).file)) p.committed = true;
  for (const auto& file : committed) r.notes.push_back("the products' C committed together in '" + file + "'");
  r.wall_seconds = MPI_Wtime() - began;
  std::string json;
  comm.step([&] {
    if (!root) return;
    if (!o.quiet) std::fputs(report::format_products_table(r).c_str(), stdout);
    std::fflush(stdout);
    const nlohmann::json j = report::to_json(r);
    if (!o.report.empty()) io::write_file_replacing(o.report, j.dump(2) + "\n");
    json = j.dump();
  });
  if (report_json) *report_json = comm.broadcast(std::move(json), kRoot);
  if (r.failed() > 0) fail(r, verification, origin);
}

}  // namespace tessera::job
