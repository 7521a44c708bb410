// A kernel using the installed device API, built without -rdc (ring) and with it (ring_rdc; ring_rdc_lib takes the
// kernel from a static library built with it, ring_kernel.cu): every PE writes its number into the next PE's slot
// with tshmem::p; the host checks what arrived. Needs a GPU per PE (skips otherwise, exit 77).
#include <cuda_runtime.h>

#include <cstdio>

#include <tshmem/tshmem.h>
#include <tshmem/device/tshmem_device.cuh>

#if RING_KERNEL_IN_LIBRARY
void ring_launch(int *slot);  // ring_kernel.cu
#else
__global__ void ring(int *slot) {
  const int next = (tshmem::my_pe() + 1) % tshmem::n_pes();
  tshmem::p(slot, 1000 + tshmem::my_pe(), next);
}

// clang-format splits the launch brackets inside a preprocessor branch.
// clang-format off
static void ring_launch(int *slot) { ring<<<1, 1>>>(slot); }
// clang-format on
#endif

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no GPU\n");
    return 77;
  }
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "tshmem_init: %s\n", tshmemx_last_error());
    return 1;
  }
  int *slot = static_cast<int *>(tshmem_calloc(1, sizeof(int)));
  ring_launch(slot);
  tshmem_barrier_all();  // completes the kernel and orders its stores before every PE reads
  int got = 0;
  cudaMemcpy(&got, slot, sizeof(got), cudaMemcpyDeviceToHost);
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int expected = 1000 + (me + n - 1) % n;
  std::printf("PE %d: got %d, expected %d: %s\n", me, got, expected, got == expected ? "ok" : "WRONG");
  tshmem_free(slot);
  tshmem_finalize();
  return got == expected ? 0 : 1;
}
