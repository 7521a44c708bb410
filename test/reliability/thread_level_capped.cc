// The application initialised MPI with MPI_THREAD_FUNNELED; tshmem_init_thread(TSHMEM_THREAD_MULTIPLE) must
// then provide what MPI provides (FUNNELED, or less if MPI gave less), say so, and report it on every PE.
#include <mpi.h>

#include <cstdio>

#include "tshmem/tshmem.h"

int main(int argc, char **argv) {
  int mpi_provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &mpi_provided);
  const int expected = mpi_provided >= MPI_THREAD_FUNNELED ? TSHMEM_THREAD_FUNNELED : TSHMEM_THREAD_SINGLE;
  int provided = -1, queried = -1;
  const int rc = tshmem_init_thread(TSHMEM_THREAD_MULTIPLE, &provided);
  if (rc == 0) tshmem_query_thread(&queried);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int ok = rc == 0 && provided == expected && queried == expected;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rc == 0) tshmem_finalize();
  if (!ok)
    std::printf("FAIL on PE %d: rc %d (%s), provided %d, queried %d, expected %d (MPI provided %d)\n", rank, rc,
                rc ? tshmemx_last_error() : "", provided, queried, expected, mpi_provided);
  if (all_ok && rank == 0)
    std::printf("PASS: MPI at level %d caps tshmem's at %d on every PE\n", mpi_provided, expected);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
