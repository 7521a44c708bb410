// An NVSHMEM kernel, unchanged NVSHMEM names, against the installed compat headers (no -rdc): every PE
// writes its number into the next PE's slot with nvshmem_int_p, launched with nvshmemx_collective_launch.
#include <cstdio>

#include "nvshmem.h"
#include "nvshmemx.h"

__global__ void ring(int *slot) {
  nvshmem_int_p(slot, 2000 + nvshmem_my_pe(), (nvshmem_my_pe() + 1) % nvshmem_n_pes());
  nvshmem_barrier_all();
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no GPU\n");
    return 77;
  }
  nvshmem_init();
  int *slot = static_cast<int *>(nvshmem_calloc(1, sizeof(int)));
  void *args[] = {&slot};
  if (nvshmemx_collective_launch((const void *)ring, dim3(1), dim3(1), args, 0, 0) != NVSHMEMX_SUCCESS) {
    std::printf("collective launch: %s\n", tshmemx_last_error());
    return 1;
  }
  cudaDeviceSynchronize();
  int got = 0;
  cudaMemcpy(&got, slot, sizeof(got), cudaMemcpyDeviceToHost);
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes(), expected = 2000 + (me + n - 1) % n;
  std::printf("nvshmem PE %d: got %d, expected %d: %s\n", me, got, expected, got == expected ? "ok" : "WRONG");
  nvshmem_free(slot);
  nvshmem_finalize();
  return got == expected ? 0 : 1;
}
