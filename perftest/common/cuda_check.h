// How a benchmark stops on a failed CUDA call: the place, the call and CUDA's words on stderr, then MPI_Abort
// (every PE of the job ends, none waits for the stopped one).
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

#define PERF_CUDA(call) ::tshmem_perf::check_cuda((call), #call, __FILE__, __LINE__)

namespace tshmem_perf {

inline void check_cuda(cudaError_t rc, const char *what, const char *file, int line) {
  if (rc == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, cudaGetErrorString(rc));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace tshmem_perf
