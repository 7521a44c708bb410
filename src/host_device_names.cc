// The host twins of the eight names that CUDA units call on the host and in kernels (tshmem/tshmem.h,
// tshmem/device/host_device_names.cuh): a CUDA unit's `static inline __host__ __device__ tshmem_my_pe`
// calls tshmemi_host_my_pe on the host. They forward to the exported functions, which C callers use.
#include "tshmem/tshmem.h"

extern "C" {
TSHMEM_API int tshmemi_host_my_pe(void);
TSHMEM_API int tshmemi_host_n_pes(void);
TSHMEM_API void *tshmemi_host_ptr(const void *dest, int pe);
TSHMEM_API int tshmemi_host_putmem(void *dest, const void *src, size_t nbytes, int pe);
TSHMEM_API int tshmemi_host_getmem(void *dest, const void *src, size_t nbytes, int pe);
TSHMEM_API void tshmemi_host_quiet(void);
TSHMEM_API void tshmemi_host_barrier_all(void);
TSHMEM_API void tshmemi_host_sync_all(void);
TSHMEM_API int tshmemi_host_team_my_pe(tshmem_team_t team);
TSHMEM_API int tshmemi_host_team_n_pes(tshmem_team_t team);
TSHMEM_API int tshmemi_host_team_translate_pe(tshmem_team_t src_team, int src_pe, tshmem_team_t dest_team);
TSHMEM_API int tshmemi_host_barrier(tshmem_team_t team);

TSHMEM_API int tshmemi_host_my_pe(void) { return tshmem_my_pe(); }
TSHMEM_API int tshmemi_host_n_pes(void) { return tshmem_n_pes(); }
TSHMEM_API void *tshmemi_host_ptr(const void *dest, int pe) { return tshmem_ptr(dest, pe); }
TSHMEM_API int tshmemi_host_putmem(void *dest, const void *src, size_t nbytes, int pe) {
  return tshmem_putmem(dest, src, nbytes, pe);
}
TSHMEM_API int tshmemi_host_getmem(void *dest, const void *src, size_t nbytes, int pe) {
  return tshmem_getmem(dest, src, nbytes, pe);
}
TSHMEM_API void tshmemi_host_quiet(void) { tshmem_quiet(); }
TSHMEM_API void tshmemi_host_barrier_all(void) { tshmem_barrier_all(); }
TSHMEM_API void tshmemi_host_sync_all(void) { tshmem_sync_all(); }
TSHMEM_API int tshmemi_host_team_my_pe(tshmem_team_t team) { return tshmem_team_my_pe(team); }
TSHMEM_API int tshmemi_host_team_n_pes(tshmem_team_t team) { return tshmem_team_n_pes(team); }
TSHMEM_API int tshmemi_host_team_translate_pe(tshmem_team_t src_team, int src_pe, tshmem_team_t dest_team) {
  return tshmem_team_translate_pe(src_team, src_pe, dest_team);
}
TSHMEM_API int tshmemi_host_barrier(tshmem_team_t team) { return tshmem_barrier(team); }
}
