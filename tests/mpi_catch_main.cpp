// main() of the Catch2 programs that run under mpirun (comm.exchanges.*, job.multiply.*): MPI
// around the session, and every rank's verdict: a failure on any rank fails the test on rank 0 too.
#include <mpi.h>

#include <catch2/catch_session.hpp>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const int failed = Catch::Session().run(argc, argv);
  int any = failed != 0 ? 1 : 0, total = 0;
  MPI_Allreduce(&any, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
