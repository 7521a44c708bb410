// A second translation unit with its own constant copy of the device state, built into a shared library
// (and, with DEVICE_STATE_MODULE, into a module that the test dlopens after tshmem_init).
#include <cuda_runtime.h>

#include "tshmem/device/tshmem_device.cuh"

#ifdef DEVICE_STATE_MODULE
#define DEVICE_STATE_FN device_state_module_read
#else
#define DEVICE_STATE_FN device_state_lib_read
#endif

namespace {

__global__ void read_state(long long *out) {
  out[0] = tshmem::my_pe();
  out[1] = tshmem::n_pes();
  for (int pe = 0; pe < tshmem::n_pes() && pe < 8; ++pe)
    out[2 + pe] = static_cast<long long>(tshmemi::state().peer_base[pe]);
}

}  // namespace

/// Fills out[0] = my_pe, out[1] = n_pes, out[2 + pe] = peer_base[pe] (pe < 8) as this unit sees them.
extern "C" __attribute__((visibility("default"))) int DEVICE_STATE_FN(long long *host_out) {
  long long *dev = nullptr;
  cudaError_t rc = cudaMalloc(&dev, 10 * sizeof(long long));
  if (rc != cudaSuccess) return rc;
  cudaMemset(dev, 0, 10 * sizeof(long long));
  read_state<<<1, 1>>>(dev);
  rc = cudaMemcpy(host_out, dev, 10 * sizeof(long long), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  return rc;
}
