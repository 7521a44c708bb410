// A second unit that includes the installed device API, for the -rdc programs (ring_rdc, nvshmem_ring_rdc): under
// separate compilation both units share the program's one device state, from libtshmem_device.a.
#include <tshmem/device/tshmem_device.cuh>

__global__ void second_unit_n_pes(int *out) { *out = tshmem::n_pes(); }
