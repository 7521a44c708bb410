// A unit that does not include tshmem: under CUDA lazy loading its module loads on its kernel's first launch, as a
// framework's or a JIT's kernels do.
#include <cuda_runtime.h>

__global__ void plain_increment(int *counter) { atomicAdd(counter, 1); }

cudaError_t launch_plain(int *counter, cudaStream_t stream) {
  plain_increment<<<1, 1, 0, stream>>>(counter);
  return cudaGetLastError();
}
