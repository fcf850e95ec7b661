/* Collectives for AMPI checks (whatif tester, check 3).
 * usage: coll [iters] [work] [lb_period]
 * Per iteration: rank 0 MPI_Bcast of 4 doubles, each rank computes (rank+1)*work units (imbalanced: rank r does r+1 times
 * rank 0's work), MPI_Reduce(MPI_SUM) to rank 0, MPI_Barrier. If lb_period > 0, every lb_period iterations all ranks call
 * AMPI_Migrate(AMPI_INFO_LB_SYNC) (load balancing with +balancer). Prints the average iteration time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double work(long units, double x) {
  for (long i = 0; i < units; i++) x = x * 0.999999 + 1e-7 * (i & 7);
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  long units = argc > 2 ? atol(argv[2]) : 200000;
  int lbp = argc > 3 ? atoi(argv[3]) : 0;
  double params[4] = {1, 2, 3, 4}, sum = 0, acc = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int it = 0; it < iters; it++) {
    if (rank == 0) params[0] = it;
    MPI_Bcast(params, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double x = work(units * (rank + 1), params[0] + rank);
    MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    acc += sum;
    if (lbp > 0 && (it + 1) % lbp == 0 && it + 1 < iters) AMPI_Migrate(AMPI_INFO_LB_SYNC);
  }
  double t1 = MPI_Wtime();
  if (rank == 0) printf("coll: ranks %d iters %d units %ld lb_period %d: total %.6f s, per iteration %.3f ms, acc %g\n",
                        size, iters, units, lbp, t1 - t0, (t1 - t0) / iters * 1e3, acc);
  MPI_Finalize();
  return 0;
}
