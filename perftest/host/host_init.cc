// Time from tshmem_init to the first usable allocation (every PE), reported as the slowest PE's time.
#include <mpi.h>

#include <chrono>
#include <cstdio>

#include "tshmem/tshmem.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);  // MPI start-up is the launcher's cost, not tshmem's: kept out of the timing
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "host_init: tshmem_init failed: %s\n", tshmemx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  void *first = tshmem_malloc(4096);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (tshmem_my_pe() == 0)
    std::printf("#tshmem_init + first tshmem_malloc\nPEs               backend           time (s)\n%-18d%-18s%.4f\n",
                tshmem_n_pes(), tshmemx_backend_name(), slowest);
  tshmem_free(first);
  tshmem_finalize();
  MPI_Finalize();
  return first != nullptr ? 0 : 1;
}
