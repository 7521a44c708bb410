// The device-side cost of the barriers, without launch overhead: `iters` barriers inside ONE kernel (one block
// per PE), NVSHMEM's barrier perftest shape, beside coll_bench's on-stream figure. Linked into
// tshmem_coll_barrier only (TSHMEM_COLL_DEVICE_LOOP).
#include <cuda_runtime.h>

#include "barrier_loop.h"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/sync.cuh"

namespace {

/// which: 0 = tshmem::coll::barrier_block(world) (what tshmemx_barrier_on_stream runs), 1 = tshmem::barrier_all.
__global__ void barrier_loop_kernel(int iters, int which) {
  for (int i = 0; i < iters; ++i) {
    if (which == 0)
      tshmem::coll::barrier_block(TSHMEM_TEAM_WORLD);
    else
      tshmem::barrier_all<tshmem::block_scope>();
  }
}

}  // namespace

double tshmem_coll_barrier_loop_us(int iters, int which, int threads, cudaStream_t stream) {
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) return -1;
  cudaEventRecord(start, stream);
  barrier_loop_kernel<<<1, threads, 0, stream>>>(iters, which);
  cudaEventRecord(stop, stream);
  const bool ok = cudaGetLastError() == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess;
  float ms = 0;
  if (ok) cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok && iters > 0 ? static_cast<double>(ms) * 1e3 / iters : -1;
}
