// TSHMEM_HOST_NAMES_ONLY: a CUDA unit that keeps the plain host declarations of tshmem_my_pe & co. (no device
// twins of those eight names) still compiles with the whole device API, and its host code calls the exported
// symbols. Compile-only (an OBJECT library).
#define TSHMEM_HOST_NAMES_ONLY 1
#include "tshmem/device/tshmem_device.cuh"
#include "tshmem/tshmem.h"

#ifdef TSHMEMI_HOST_DEVICE_NAMES
#error "TSHMEM_HOST_NAMES_ONLY must keep the host declarations"
#endif

__global__ void host_names_only_kernel(int *out) { *out = tshmem::my_pe() + tshmem_int_g(out, 0); }

int host_names_only_my_pe() { return tshmem_my_pe(); }
