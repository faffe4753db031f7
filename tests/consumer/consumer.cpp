// consumer A B C [NAME=VALUE ...] [--json FILE] | consumer --names (Options::names(), one a line):
// tessera's installed API as a program outside
// tessera's build uses it, on the ranks it is launched on. A, B, C: FILE:/DATASET; NAME=VALUE:
// any `tessera run` option through Options::set (e.g. alpha=2 transpose-b=true); --json FILE:
// each rank writes the report it got to FILE.<rank>.
//
// First the dry run (rank 0 prints "consumer: plan ..."), then the multiply (rank 0 prints
// "consumer: result ..." from the Result's accessors, which the test compares with the JSON).
// Exit 0 on success, 2 when tessera refused or failed on every rank alike (the message is
// printed), 3 when the plan and the run disagree; the job is aborted when one rank failed alone.
#include <tessera/tessera.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace {

void print_result(const tessera::Result& r, int size) {
  std::printf(
      "consumer: result version=%s ranks=%d m=%lld n=%lld k=%lld dtype=%s algorithm=%s backend=%s grid=%dx%d "
      "wall=%.6f gflops=%.6f bound=%s\n",
      tessera::version(), size, static_cast<long long>(r.m()), static_cast<long long>(r.n()),
      static_cast<long long>(r.k()), r.dtype().c_str(), r.algorithm().c_str(), r.backend().c_str(), r.grid_rows(),
      r.grid_cols(), r.wall_seconds(), r.gflops(), r.bound().c_str());
  for (int rank = 0; rank < r.ranks(); ++rank) {
    std::printf("consumer: rank %d host=%s active=%d", rank, r.rank_host(rank).c_str(), r.rank_active(rank) ? 1 : 0);
    for (const auto& phase : r.phase_names(rank)) std::printf(" %s=%.6f", phase.c_str(), r.phase_seconds(rank, phase));
    std::printf("\n");
  }
}

int run(int argc, char** argv, int rank, int size) {
  tessera::Options options;
  options.a(argv[1]).b(argv[2]).c(argv[3]);
  std::string json_path;
  for (int i = 4; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
      continue;
    }
    const char* eq = std::strchr(argv[i], '=');
    if (eq == nullptr) throw std::invalid_argument(std::string("not NAME=VALUE: ") + argv[i]);
    options.set(std::string(argv[i], static_cast<std::size_t>(eq - argv[i])), eq + 1);
  }
  const tessera::Plan plan = tessera::dry_run(options, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("consumer: plan algorithm=%s grid=%dx%d m=%lld predicted=%.6f\n", plan.algorithm().c_str(),
                plan.grid_rows(), plan.grid_cols(), static_cast<long long>(plan.m()), plan.predicted_seconds());
  const tessera::Result result = tessera::multiply(options, MPI_COMM_WORLD);
  if (rank == 0) print_result(result, size);
  if (!json_path.empty()) std::ofstream(json_path + "." + std::to_string(rank)) << result.json();
  if (plan.m() != result.m() || plan.algorithm() != result.algorithm()) {
    if (rank == 0)
      std::fprintf(stderr, "consumer: the plan (%s) and the run (%s) differ\n", plan.algorithm().c_str(),
                   result.algorithm().c_str());
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc == 2 && std::strcmp(argv[1], "--names") == 0) {  // the options' names, for the test
    if (rank == 0)
      for (const auto& name : tessera::Options::names()) std::printf("%s\n", name.c_str());
    MPI_Finalize();
    return 0;
  }
  if (argc < 4) {
    if (rank == 0) std::fprintf(stderr, "usage: consumer A.h5:/A B.h5:/B C.h5:/C [NAME=VALUE ...] [--json FILE]\n");
    MPI_Finalize();
    return 1;
  }
  int code = 0;
  try {
    code = run(argc, argv, rank, size);
  } catch (const tessera::MultiplyError& e) {
    if (!e.agreed()) {
      std::fprintf(stderr, "consumer: error on rank %d alone: %s\n", rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) std::fprintf(stderr, "consumer: error (rank %d, agreed): %s\n", e.origin_rank(), e.what());
    code = 2;
  } catch (const std::invalid_argument& e) {  // Options::set: the same on every rank
    if (rank == 0) std::fprintf(stderr, "consumer: bad option: %s\n", e.what());
    code = 2;
  }
  MPI_Finalize();
  return code;
}
