/* 1-D Jacobi halo exchange for AMPI checks (whatif tester, check 3).
 * usage: jacobi1d [iters] [n_local] [sweeps]
 * Each rank owns n_local points; per iteration: Irecv from left/right, Isend to left/right (non-periodic),
 * `sweeps` relaxation sweeps over the interior (the compute, a few ms), MPI_Waitall, update the two edge points,
 * MPI_Allreduce(MPI_SUM) of the local residual. Prints the average iteration time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 100;
  int n = argc > 2 ? atoi(argv[2]) : 20000;
  int sweeps = argc > 3 ? atoi(argv[3]) : 40;
  double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
  for (int i = 0; i < n + 2; i++) a[i] = b[i] = (rank * n + i) % 7;
  int left = rank - 1, right = rank + 1;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime(), res = 0;
  for (int it = 0; it < iters; it++) {
    MPI_Request req[4]; int nr = 0;
    if (left >= 0) {
      MPI_Irecv(&a[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[nr++]);
      MPI_Isend(&a[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[nr++]);
    }
    if (right < size) {
      MPI_Irecv(&a[n + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[nr++]);
      MPI_Isend(&a[n], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[nr++]);
    }
    for (int s = 0; s < sweeps; s++)            /* interior compute */
      for (int i = 2; i < n; i++) b[i] = 0.5 * b[i] + 0.25 * (a[i - 1] + a[i + 1]);
    MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
    b[1] = 0.5 * (a[0] + a[2]); b[n] = 0.5 * (a[n - 1] + a[n + 1]);
    double local = 0;
    for (int i = 1; i <= n; i++) { local += (b[i] - a[i]) * (b[i] - a[i]) * 1e-12; a[i] = b[i]; }
    MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double t1 = MPI_Wtime();
  if (rank == 0) printf("jacobi1d: ranks %d iters %d n %d sweeps %d: total %.6f s, per iteration %.3f ms, res %g\n",
                        size, iters, n, sweeps, t1 - t0, (t1 - t0) / iters * 1e3, res);
  free(a); free(b);
  MPI_Finalize();
  return 0;
}
