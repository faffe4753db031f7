/* p{s,d,c,z}gemm_ timed as a ScaLAPACK program sees it (issue 44), built twice like
 * tests/scalapack/pgemm_check.c: pgemm_bench_scalapack (the system's ScaLAPACK) and
 * pgemm_bench_tessera (libtessera_scalapack linked first). scripts/pgemm_bench.py runs the pair
 * alternated and writes the table of docs/performance.md.
 *
 *   mpirun -n P pgemm_bench NPROW NPCOL s|d|c|z M N K NB WARMUP REPEATS [TRANSA TRANSB]
 *
 * A, B and C are block-cyclic over the grid with NB x NB blocks, random in [-1, 1) (never zeros);
 * each timed call is between barriers and its time is the slowest process's. Prints one line:
 * "pgemm_bench <median s> <min s> <max s> <GFLOP/s at the median>" (a complex product counts
 * 8 MNK real flops). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_pinfo(int *me, int *nprocs);
void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void psgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
             const int *, const int *, const int *, const float *, const int *, const int *, const int *,
             const float *, float *, const int *, const int *, const int *);
void pdgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
             const int *, const int *, const int *, const double *, const int *, const int *, const int *,
             const double *, double *, const int *, const int *, const int *);
void pcgemm_(const char *, const char *, const int *, const int *, const int *, const void *, const void *,
             const int *, const int *, const int *, const void *, const int *, const int *, const int *,
             const void *, void *, const int *, const int *, const int *);
void pzgemm_(const char *, const char *, const int *, const int *, const int *, const void *, const void *,
             const int *, const int *, const int *, const void *, const int *, const int *, const int *,
             const void *, void *, const int *, const int *, const int *);

/* `parts` values per element (2: complex). */
static void *local_matrix(int rows, int cols, int nb, int myrow, int mycol, int nprow, int npcol, int context,
                          int single, int parts, int *desc, unsigned *seed) {
  int zero = 0;
  int lr = numroc_(&rows, &nb, &myrow, &zero, &nprow), lc = numroc_(&cols, &nb, &mycol, &zero, &npcol);
  int lld = lr > 1 ? lr : 1;
  int d[9] = {1, context, rows, cols, nb, nb, 0, 0, lld};
  memcpy(desc, d, sizeof d);
  size_t n = (size_t)lld * (size_t)(lc > 0 ? lc : 1) * (size_t)parts;
  void *x = malloc(n * (single ? sizeof(float) : sizeof(double)));
  for (size_t i = 0; i < n; ++i) {
    double v = (double)rand_r(seed) / RAND_MAX * 2.0 - 1.0;
    if (single)
      ((float *)x)[i] = (float)v;
    else
      ((double *)x)[i] = v;
  }
  return x;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 10 && argc != 12) {
    fprintf(stderr, "usage: pgemm_bench NPROW NPCOL s|d|c|z M N K NB WARMUP REPEATS [TRANSA TRANSB]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char prec = argv[3][0];
  int nprow = atoi(argv[1]), npcol = atoi(argv[2]), single = prec == 's' || prec == 'c';
  int parts = prec == 'c' || prec == 'z' ? 2 : 1;
  int m = atoi(argv[4]), n = atoi(argv[5]), k = atoi(argv[6]), nb = atoi(argv[7]);
  int warmup = atoi(argv[8]), repeats = atoi(argv[9]);
  char ta = argc == 12 ? argv[10][0] : 'N', tb = argc == 12 ? argv[11][0] : 'N';
  int me, nprocs, context, myrow, mycol, pr, pc, one = 1;
  Cblacs_pinfo(&me, &nprocs);
  Cblacs_get(-1, 0, &context);
  Cblacs_gridinit(&context, "Row", nprow, npcol);
  Cblacs_gridinfo(context, &pr, &pc, &myrow, &mycol);
  if (myrow < 0) {
    fprintf(stderr, "pgemm_bench: run it on exactly NPROW x NPCOL processes\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  unsigned seed = 12345u + 977u * (unsigned)me;
  int da[9], db[9], dc[9];
  int ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
  void *a = local_matrix(ar, ac, nb, myrow, mycol, nprow, npcol, context, single, parts, da, &seed);
  void *b = local_matrix(br, bc, nb, myrow, mycol, nprow, npcol, context, single, parts, db, &seed);
  void *c = local_matrix(m, n, nb, myrow, mycol, nprow, npcol, context, single, parts, dc, &seed);
  double *times = malloc(sizeof(double) * (repeats > 0 ? repeats : 1));
  for (int r = 0; r < warmup + repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (parts == 2 && single) {
      float alpha[2] = {1.0f, 0.5f}, beta[2] = {0.5f, -0.25f};
      pcgemm_(&ta, &tb, &m, &n, &k, alpha, a, &one, &one, da, b, &one, &one, db, beta, c, &one, &one, dc);
    } else if (parts == 2) {
      double alpha[2] = {1.0, 0.5}, beta[2] = {0.5, -0.25};
      pzgemm_(&ta, &tb, &m, &n, &k, alpha, a, &one, &one, da, b, &one, &one, db, beta, c, &one, &one, dc);
    } else if (single) {
      float alpha = 1.0f, beta = 0.5f;
      psgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &one, &one, da, b, &one, &one, db, &beta, c, &one, &one, dc);
    } else {
      double alpha = 1.0, beta = 0.5;
      pdgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &one, &one, da, b, &one, &one, db, &beta, c, &one, &one, dc);
    }
    double t = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r >= warmup) times[r - warmup] = slowest;
  }
  if (me == 0 && repeats > 0) {
    qsort(times, repeats, sizeof(double), by_value);
    double med = repeats % 2 ? times[repeats / 2] : 0.5 * (times[repeats / 2 - 1] + times[repeats / 2]);
    printf("pgemm_bench %.6f %.6f %.6f %.2f\n", med, times[0], times[repeats - 1],
           (parts == 2 ? 8.0 : 2.0) * m * n * (double)k / med * 1e-9);
  }
  free(times);
  free(a);
  free(b);
  free(c);
  Cblacs_gridexit(context);
  MPI_Finalize();
  return 0;
}
