/* The same ScaLAPACK program, built twice: against the system's ScaLAPACK (pgemm_check_scalapack)
 * and with libtessera_scalapack linked first (pgemm_check_tessera); ctest scalapack.* runs both
 * over the same cases and compares each C with numpy (tests/scripts/scalapack_dropin.py).
 *
 *   mpirun -n P pgemm_check NPROW NPCOL CASES OUT
 *
 * builds an NPROW x NPCOL BLACS grid (row-major; processes beyond it stay outside the grid and
 * skip the call, as ScaLAPACK programs do, but take part in the MPI around it), and for each line
 * of CASES
 *
 *   s|d|c|z TRANSA TRANSB M N K ALPHA BETA MB NB IA JA IB JB IC JC RSRC CSRC ALPHA_IM BETA_IM
 *
 * makes A, B and C (each its sub-matrix plus a margin of 2 rows and 3 columns past it, and
 * IA-1 ... before it), block-cyclic as said in main() below, each local array
 * with a leading dimension 2 above its rows, fills them from value() below (which the script
 * computes too; a complex element's imaginary part is value() of matrix 3 + which), calls
 * p{s,d,c,z}gemm_ and writes the whole global C, margins included, to OUT: a line "case I ROWS
 * COLS" and then the values, row by row (a complex element as its real and imaginary parts, so
 * COLS counts parts). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_pinfo(int* me, int* nprocs);
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void psgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*,
             const int*, const int*, const float*, const int*, const int*, const int*, const float*, float*, const int*,
             const int*, const int*);
void pdgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
             const int*, const int*, const double*, const int*, const int*, const int*, const double*, double*,
             const int*, const int*, const int*);
/* COMPLEX and COMPLEX*16: pairs of float, of double. */
void pcgemm_(const char*, const char*, const int*, const int*, const int*, const void*, const void*, const int*,
             const int*, const int*, const void*, const int*, const int*, const int*, const void*, void*, const int*,
             const int*, const int*);
void pzgemm_(const char*, const char*, const int*, const int*, const int*, const void*, const void*, const int*,
             const int*, const int*, const void*, const int*, const int*, const int*, const void*, void*, const int*,
             const int*, const int*);

/* Element (i, j) of matrix `which` (0 A, 1 B, 2 C) of case `c`: in [-1, 1), from integers only. */
static double value(int c, int which, long i, long j) {
  long h = (i * 7919 + j * 104729 + which * 1299709 + (long)c * 15485863) % 2000003;
  return (double)h / 1000001.5 - 1.0;
}

typedef struct {
  int rows, cols, desc[9], lld;
  double* d; /* the local array, as doubles or floats (pairs of them where complex) */
} Dist;

/* Element `at` of a local array of `single` (float) or double parts, `parts` (1, or 2: complex)
 * per element: part p of it as a double, and stored. */
static double get(const Dist* x, size_t at, int single, int parts, int p) {
  return single ? ((float*)x->d)[at * parts + p] : x->d[at * parts + p];
}
static void put(Dist* x, size_t at, int single, int parts, int p, double v) {
  if (single)
    ((float*)x->d)[at * parts + p] = (float)v;
  else
    x->d[at * parts + p] = v;
}

/* `nan` (r0, r1, c0, c1), when r1 > r0: NaN there instead (C's sub-matrix under beta = 0, which
 * ScaLAPACK does not read). */
static void make(Dist* x, int rows, int cols, int mb, int nb, int rsrc, int csrc, int context, int nprow, int npcol,
                 int myrow, int mycol, int single, int parts, int c, int which, const long nan[4]) {
  int lr = myrow >= 0 ? numroc_(&rows, &mb, &myrow, &rsrc, &nprow) : 0;
  int lc = mycol >= 0 ? numroc_(&cols, &nb, &mycol, &csrc, &npcol) : 0;
  x->rows = rows;
  x->cols = cols;
  x->lld = lr + 2;
  int d[9] = {1, context, rows, cols, mb, nb, rsrc, csrc, x->lld};
  memcpy(x->desc, d, sizeof d);
  size_t n = (size_t)x->lld * (size_t)(lc > 0 ? lc : 1);
  x->d = calloc(n * parts, single ? sizeof(float) : sizeof(double));
  if (myrow < 0) return;
  for (int lj = 0; lj < lc; ++lj) {
    long gj = ((long)(lj / nb) * npcol + (mycol - csrc + npcol) % npcol) * nb + lj % nb;
    for (int li = 0; li < lr; ++li) {
      long gi = ((long)(li / mb) * nprow + (myrow - rsrc + nprow) % nprow) * mb + li % mb;
      for (int p = 0; p < parts; ++p) {
        double v = value(c, which + 3 * p, gi, gj);
        if (nan && gi >= nan[0] && gi < nan[1] && gj >= nan[2] && gj < nan[3]) v = NAN;
        put(x, li + (size_t)lj * x->lld, single, parts, p, v);
      }
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 5) {
    fprintf(stderr, "usage: pgemm_check NPROW NPCOL CASES OUT\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int me, nprocs, context, nprow = atoi(argv[1]), npcol = atoi(argv[2]), myrow, mycol, gr, gc;
  Cblacs_pinfo(&me, &nprocs);
  Cblacs_get(-1, 0, &context);
  Cblacs_gridinit(&context, "Row", nprow, npcol);
  Cblacs_gridinfo(context, &gr, &gc, &myrow, &mycol);
  int in_grid = myrow >= 0 && myrow < nprow && mycol >= 0;
  if (!in_grid) myrow = mycol = -1;
  FILE* cases = fopen(argv[3], "r");
  FILE* out = me == 0 ? fopen(argv[4], "w") : NULL;
  if (!cases || (me == 0 && !out)) {
    fprintf(stderr, "pgemm_check: cannot open %s or %s\n", argv[3], argv[4]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char prec, ta, tb;
  int m, n, k, mb, nb, ia, ja, ib, jb, ic, jc, rsrc, csrc, c = 0;
  double alpha, beta, alpha_im, beta_im;
  while (fscanf(cases, " %c %c %c %d %d %d %lf %lf %d %d %d %d %d %d %d %d %d %d %lf %lf", &prec, &ta, &tb, &m, &n, &k,
                &alpha, &beta, &mb, &nb, &ia, &ja, &ib, &jb, &ic, &jc, &rsrc, &csrc, &alpha_im, &beta_im) == 20) {
    /* s, d: float, double; c, z: complex of float, of double; S, D: float, double with B the very
     * array A (X^T X, X X^T); X: double, A, B and C three disjoint sub-matrices of one array (as
     * PDGETRF's update calls PDGEMM) */
    int single = prec == 's' || prec == 'S' || prec == 'c', alias = prec == 'S' || prec == 'D', one = prec == 'X';
    int parts = prec == 'c' || prec == 'z' ? 2 : 1;
    int na = ta == 'N' || ta == 'n', nbn = tb == 'N' || tb == 'n';
    Dist A, B, C;
    if (one) {
      int ar = na ? m : k, ac = na ? k : m, br = nbn ? k : n, bc = nbn ? n : k;
      int rows = ia - 1 + ar, cols = ja - 1 + ac;
      if (ib - 1 + br > rows) rows = ib - 1 + br;
      if (ic - 1 + m > rows) rows = ic - 1 + m;
      if (jb - 1 + bc > cols) cols = jb - 1 + bc;
      if (jc - 1 + n > cols) cols = jc - 1 + n;
      make(&A, rows + 2, cols + 3, mb, nb, rsrc, csrc, context, nprow, npcol, myrow, mycol, 0, 1, c, 0, NULL);
      B = C = A;
    } else
      make(&A, ia - 1 + (na ? m : k) + 2, ja - 1 + (na ? k : m) + 3, mb, nb, rsrc, csrc, context, nprow, npcol, myrow,
           mycol, single, parts, c, 0, NULL);
    /* A: MB x NB blocks from (RSRC, CSRC); B: NB x MB from the next process row and column; C: NB x NB
     * from (RSRC, the next column): three layouts that line up nowhere. */
    if (one) {
      /* A, B and C made above */
    } else if (alias)
      B = A;
    else
      make(&B, ib - 1 + (nbn ? k : n) + 2, jb - 1 + (nbn ? n : k) + 3, nb, mb, (rsrc + 1) % nprow, (csrc + 1) % npcol,
           context, nprow, npcol, myrow, mycol, single, parts, c, 1, NULL);
    const long nan[4] = {ic - 1, beta == 0.0 && beta_im == 0.0 ? ic - 1 + m : ic - 1, jc - 1, jc - 1 + n};
    if (!one)
      make(&C, ic - 1 + m + 2, jc - 1 + n + 3, nb, nb, rsrc, (csrc + 1) % npcol, context, nprow, npcol, myrow, mycol,
           single, parts, c, 2, nan);
    if (!in_grid) {
      /* outside the grid: no call (its context is -1 here) */
    } else if (parts == 2 && single) {
      float fa[2] = {(float)alpha, (float)alpha_im}, fb[2] = {(float)beta, (float)beta_im};
      pcgemm_(&ta, &tb, &m, &n, &k, fa, A.d, &ia, &ja, A.desc, B.d, &ib, &jb, B.desc, fb, C.d, &ic, &jc, C.desc);
    } else if (parts == 2) {
      double za[2] = {alpha, alpha_im}, zb[2] = {beta, beta_im};
      pzgemm_(&ta, &tb, &m, &n, &k, za, A.d, &ia, &ja, A.desc, B.d, &ib, &jb, B.desc, zb, C.d, &ic, &jc, C.desc);
    } else if (single) {
      float fa = (float)alpha, fb = (float)beta;
      psgemm_(&ta, &tb, &m, &n, &k, &fa, (float*)A.d, &ia, &ja, A.desc, (float*)B.d, &ib, &jb, B.desc, &fb, (float*)C.d,
              &ic, &jc, C.desc);
    } else {
      pdgemm_(&ta, &tb, &m, &n, &k, &alpha, A.d, &ia, &ja, A.desc, B.d, &ib, &jb, B.desc, &beta, C.d, &ic, &jc, C.desc);
    }
    /* The whole global C on process 0: each grid process adds the elements it holds. */
    size_t total = (size_t)C.rows * C.cols * parts;
    double *mine = calloc(total, sizeof(double)), *all = me == 0 ? calloc(total, sizeof(double)) : NULL;
    if (in_grid) {
      int lr = numroc_(&C.rows, &C.desc[4], &myrow, &C.desc[6], &nprow);
      int lc = numroc_(&C.cols, &C.desc[5], &mycol, &C.desc[7], &npcol);
      for (int lj = 0; lj < lc; ++lj) {
        long gj = ((long)(lj / C.desc[5]) * npcol + (mycol - C.desc[7] + npcol) % npcol) * C.desc[5] + lj % C.desc[5];
        for (int li = 0; li < lr; ++li) {
          long gi = ((long)(li / C.desc[4]) * nprow + (myrow - C.desc[6] + nprow) % nprow) * C.desc[4] + li % C.desc[4];
          size_t at = li + (size_t)lj * C.lld;
          for (int p = 0; p < parts; ++p) mine[(gi * C.cols + gj) * parts + p] = get(&C, at, single, parts, p);
        }
      }
    }
    MPI_Reduce(mine, all, (int)total, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
      fprintf(out, "case %d %d %d\n", c, C.rows, C.cols * parts);
      for (size_t i = 0; i < total; ++i)
        fprintf(out, "%.17g%c", all[i], (i + 1) % ((size_t)C.cols * parts) ? ' ' : '\n');
    }
    free(mine);
    free(all);
    free(A.d);
    if (!alias && !one) free(B.d);
    if (!one) free(C.d);
    ++c;
  }
  if (out) fclose(out);
  fclose(cases);
  if (in_grid) Cblacs_gridexit(context);
  MPI_Finalize();
  return 0;
}
