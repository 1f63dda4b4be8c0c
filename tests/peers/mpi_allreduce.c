/* Usage: mpirun --allow-run-as-root -np 2 --mca btl tcp,self build/peers/mpi_allreduce
 *            [min_bytes=4] [max_bytes=67108864] [iters=20] [warmup=5]
 * (--mca btl vader,self for shared memory; Debian: apt-get install openmpi-bin libopenmpi-dev;
 * built by tests/peers/build_peers.sh)
 * Not part of the test suite: the MPI peer of `ringtrain bench allreduce`. MPI_Allreduce in
 * place, float32 sum, over the bench's size schedule (x4 from min to max). Each op is timed
 * alone (MPI_Wtime, no barrier); rank 0 prints the median per size in the bench's columns.
 * Every result is checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t min_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 4;
  size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (size_t)64 << 20;
  int iters = argc > 3 ? atoi(argv[3]) : 20;
  int warmup = argc > 4 ? atoi(argv[4]) : 5;
  if (min_bytes < 4 || min_bytes % 4 || max_bytes < min_bytes || iters < 1 || warmup < 0) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce [min_bytes] [max_bytes] [iters] [warmup]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float* buf = malloc(max_bytes);
  double* times = malloc(sizeof(double) * (size_t)iters);
  const float expected = (float)(n * (n + 1) / 2);
  if (rank == 0) {
    printf("# MPI_Allreduce (in place): %d processes, float32 sum, %d timed + %d warm-up ops per size, median of "
           "rank 0's per-op times\n", n, iters, warmup);
    printf("#%11s  %12s  %12s  %12s\n", "bytes", "time_us", "algbw_GBps", "busbw_GBps");
    fflush(stdout);
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    size_t count = bytes / sizeof(float);
    for (int it = 0; it < warmup + iters; ++it) {
      for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t1 = MPI_Wtime();
      for (size_t i = 0; i < count; ++i) {
        if (buf[i] != expected) {
          fprintf(stderr, "mpi: wrong result at %zu bytes: element %zu is %g, expected %g\n", bytes, i, buf[i],
                  expected);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
      }
      if (it >= warmup) times[it - warmup] = (t1 - t0) * 1e6;
    }
    qsort(times, (size_t)iters, sizeof(double), cmp);
    int m = iters / 2;
    double us = iters % 2 ? times[m] : (times[m - 1] + times[m]) / 2;
    double algbw = (double)bytes / us / 1e3;
    if (rank == 0) {
      printf("%12zu  %12.2f  %12.3f  %12.3f\n", bytes, us, algbw, algbw * 2.0 * (n - 1) / n);
      fflush(stdout);
    }
    if (bytes > max_bytes / 4) break;
  }
  free(times);
  free(buf);
  MPI_Finalize();
  return 0;
}
