// ring.cu's kernel in a static library built with separable compilation (-rdc), linked into a program built
// without it (ring_rdc_lib): CMake device-links the program, and tshmem::device brings libtshmem_device.a there.
#include <tshmem/device/tshmem_device.cuh>

__global__ void ring_in_library(int *slot) {
  const int next = (tshmem::my_pe() + 1) % tshmem::n_pes();
  tshmem::p(slot, 1000 + tshmem::my_pe(), next);
}

void ring_launch(int *slot) { ring_in_library<<<1, 1>>>(slot); }
