/* nbc2: every non-blocking collective SimGrid 3.32 traces, overlapped with computation or not, and a
 * ring exchange completed with a non-blocking broadcast in one MPI_Waitall. No MPI_Test (SimGrid sleeps
 * 0.1 ms in each, which its trace does not record). whatif test data (tests/data/mpi-suite/README.md). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static double work(double *x, int n, int reps) {
  double s = 0;
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < n; i++) { x[i] = x[i] * 0.999 + 1e-3 * (i & 7); s += x[i]; }
  return s;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int iters = argc > 1 ? atoi(argv[1]) : 3;
  int n = 50000;
  double *x = calloc(n, sizeof(double));
  double *v = calloc(20000, sizeof(double)), *vr = calloc(20000 * 64, sizeof(double));
  double *big = calloc(20000 * 64, sizeof(double));
  double *hs = calloc(2048, sizeof(double)), *hr = calloc(2048, sizeof(double));
  int *counts = calloc(P, sizeof(int)), *displs = calloc(P, sizeof(int));
  for (int i = 0; i < P; i++) { counts[i] = 100 * (i + 1); displs[i] = i == 0 ? 0 : displs[i-1] + counts[i-1]; }
  double acc = 0;
  for (int it = 0; it < iters; it++) {
    MPI_Request r, q[3];
    MPI_Iallreduce(v, vr, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    acc += work(x, n, 2 + rank % 3);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Ibcast(big, 12000, MPI_DOUBLE, P - 2, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(hr, 2048, MPI_DOUBLE, (rank + P - 1) % P, 7, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(hs, 2048, MPI_DOUBLE, (rank + 1) % P, 7, MPI_COMM_WORLD, &q[2]);
    acc += work(x, n, 1);
    MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
    MPI_Ialltoall(v, 500, MPI_DOUBLE, big, 500, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    acc += work(x, n, 1 + rank % 2);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Iallgather(v, 300, MPI_DOUBLE, big, 300, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Iallgatherv(v, counts[rank], MPI_DOUBLE, big, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    acc += work(x, n, 1);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Ireduce(v, vr, 9000, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD, &r);
    acc += work(x, n, 1 + (rank == 1));
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Igather(v, 2000, MPI_DOUBLE, big, 2000, MPI_DOUBLE, P - 1, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Iscatter(big, 1500, MPI_DOUBLE, v, 1500, MPI_DOUBLE, 2 % P, MPI_COMM_WORLD, &r);
    acc += work(x, n / 2, 1);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Iscan(v, vr, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Iexscan(v, vr, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    acc += work(x, n, 1);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  if (rank == 0) printf("nbc2 P=%d acc=%g %g\n", P, acc, vr[5]);
  MPI_Finalize();
  return 0;
}
