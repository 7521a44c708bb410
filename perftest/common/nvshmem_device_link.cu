// Linked into the host-only NVSHMEM twins (host_malloc, host_barrier): NVSHMEM's host initialisation
// references libnvshmem_device.a, whose relocatable device code needs a device link step, and CMake runs
// one only for a target with CUDA sources and separable compilation. This unit is that source.
#include <nvshmem.h>
