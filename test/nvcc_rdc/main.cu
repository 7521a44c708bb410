// main of the plain-nvcc -rdc programs (check_nvcc_rdc.sh): launches every unit's kernel once, then checks
// that each slot of this PE's inbox holds what the previous PE's unit wrote. rdc_units.h, written per program,
// lists the units as RDC_UNITS(X) and sets RDC_NVSHMEM to 1 where the program uses NVSHMEM's names (compat
// headers) instead of tshmem's.
#include <cstdio>
#include <vector>

#include "rdc_units.h"
#if RDC_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#define RDC_INIT nvshmem_init
#define RDC_MY_PE nvshmem_my_pe
#define RDC_N_PES nvshmem_n_pes
#define RDC_CALLOC nvshmem_calloc
#define RDC_BARRIER_ALL nvshmem_barrier_all
#define RDC_GETMEM nvshmem_getmem
#define RDC_FREE nvshmem_free
#define RDC_FINALIZE nvshmem_finalize
#else
#include <cuda_runtime.h>
#include <tshmem/tshmem.h>
#define RDC_INIT tshmem_init
#define RDC_MY_PE tshmem_my_pe
#define RDC_N_PES tshmem_n_pes
#define RDC_CALLOC tshmem_calloc
#define RDC_BARRIER_ALL tshmem_barrier_all
#define RDC_GETMEM tshmem_getmem
#define RDC_FREE tshmem_free
#define RDC_FINALIZE tshmem_finalize
#endif

#define RDC_DECLARE(k) void rdc_launch_##k(int *inbox);
RDC_UNITS(RDC_DECLARE)
#define RDC_ENTRY(k) rdc_launch_##k,
static void (*const kLaunches[])(int *) = {RDC_UNITS(RDC_ENTRY)};
static const int kUnits = static_cast<int>(sizeof(kLaunches) / sizeof(kLaunches[0]));

int main() {
  if (RDC_INIT() != 0) {
    std::fprintf(stderr, "init: %s\n", tshmemx_last_error());
    return 1;
  }
  const int me = RDC_MY_PE(), n = RDC_N_PES();
  int *inbox = static_cast<int *>(RDC_CALLOC(kUnits, sizeof(int)));
  if (inbox == nullptr) {
    std::fprintf(stderr, "calloc: %s\n", tshmemx_last_error());
    return 1;
  }
  for (int unit = 0; unit < kUnits; ++unit) kLaunches[unit](inbox);
  const cudaError_t rc = cudaDeviceSynchronize();
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "PE %d: kernels: %s\n", me, cudaGetErrorString(rc));
    return 1;
  }
  RDC_BARRIER_ALL();  // every PE's kernels are done and their stores visible
  std::vector<int> got(kUnits, -1);
  RDC_GETMEM(got.data(), inbox, kUnits * sizeof(int), me);
  const int prev = (me + n - 1) % n;
  int wrong = 0;
  for (int unit = 0; unit < kUnits; ++unit) {
    if (got[unit] == 1000 * (prev + 1) + unit) continue;
    if (wrong++ < 4)
      std::printf("PE %d: slot %d holds %d, expected %d\n", me, unit, got[unit], 1000 * (prev + 1) + unit);
  }
  std::printf("PE %d of %d: %d units, %d slots wrong\n", me, n, kUnits, wrong);
  RDC_BARRIER_ALL();  // no PE frees its inbox while another still reads
  RDC_FREE(inbox);
  RDC_FINALIZE();
  return wrong == 0 ? 0 : 1;
}
