// consumer A B C: C = A * B with tessera's installed API, on the ranks it is launched on
// (FILE:/DATASET each). Prints one line on rank 0; exit 0 on success, 2 when tessera refused or
// failed on every rank alike (the message is printed), and the job is aborted when only one
// rank failed.
#include <tessera/tessera.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0) std::fprintf(stderr, "usage: consumer A.h5:/A B.h5:/B C.h5:/C\n");
    MPI_Finalize();
    return 1;
  }
  tessera::Options options;
  options.a = argv[1];
  options.b = argv[2];
  options.c = argv[3];
  int code = 0;
  try {
    const tessera::Result result = tessera::multiply(options, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("consumer: tessera %s multiplied on %d ranks in %.3f s\n", tessera::version(), size, result.seconds);
  } catch (const tessera::MultiplyError& e) {
    if (!e.agreed()) {
      std::fprintf(stderr, "consumer: error on rank %d alone: %s\n", rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) std::fprintf(stderr, "consumer: error (rank %d, agreed): %s\n", e.origin_rank(), e.what());
    code = 2;
  }
  MPI_Finalize();
  return code;
}
