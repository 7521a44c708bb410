/*
 * The names that exist on the host and in kernels, for CUDA units: tshmem_my_pe, tshmem_n_pes, tshmem_ptr,
 * tshmem_putmem, tshmem_getmem, tshmem_quiet, tshmem_barrier_all, tshmem_sync_all, and (tshmemx.h)
 * tshmem_team_my_pe, tshmem_team_n_pes, tshmem_team_translate_pe (-1 for an unknown team, on the device as
 * on the host).
 *
 * nvcc cannot overload on execution space and, without -rdc, a device body cannot live in the library. So in
 * a CUDA unit tshmem/tshmem.h declares the library's host functions as tshmemi_host_<name> and this header
 * defines each public name as a `static inline __host__ __device__` function: on the host it calls the
 * library, in kernels the device API (thread scope: one thread does the whole operation). C units, dlsym
 * and foreign-function interfaces see the exported tshmem_<name> symbols, which behave as the host branch.
 * Device forms: putmem/getmem are blocking and return 0; barrier_all/sync_all are the thread-scope device
 * barriers (one thread per PE calls, sync.cuh); quiet completes the calling thread's operations.
 *
 * Part of tshmem/tshmem.h, which includes it at its end (CUDA units only) after declaring the library's
 * tshmemi_host_* twins: include tshmem/tshmem.h (or tshmem/device/tshmem_device.cuh), never this file alone.
 */
#ifndef TSHMEM_DEVICE_HOST_DEVICE_NAMES_CUH
#define TSHMEM_DEVICE_HOST_DEVICE_NAMES_CUH

#ifndef TSHMEM_TSHMEM_H
#error "tshmem/device/host_device_names.cuh is part of tshmem/tshmem.h: include tshmem/tshmem.h"
#endif

// wait.cuh first: its declarations carry the default arguments that impl/sync.cuh's definitions rely on.
#include "tshmem/device/wait.cuh"

#include "tshmem/device/coll.cuh"  // tshmem::team_view, team_any_of: the team table's lookup
#include "tshmem/device/pe.cuh"
#include "tshmem/device/rma.cuh"
#include "tshmem/device/sync.cuh"

#ifdef TSHMEMI_HOST_DEVICE_NAMES
#define TSHMEMI_HD static inline __host__ __device__

TSHMEMI_HD int tshmem_my_pe(void) {
#ifdef __CUDA_ARCH__
  return tshmem::my_pe();
#else
  return tshmemi_host_my_pe();
#endif
}

TSHMEMI_HD int tshmem_n_pes(void) {
#ifdef __CUDA_ARCH__
  return tshmem::n_pes();
#else
  return tshmemi_host_n_pes();
#endif
}

TSHMEMI_HD void *tshmem_ptr(const void *dest, int pe) {
#ifdef __CUDA_ARCH__
  return const_cast<void *>(tshmem::ptr(dest, pe));
#else
  return tshmemi_host_ptr(dest, pe);
#endif
}

TSHMEMI_HD int tshmem_putmem(void *dest, const void *src, size_t nbytes, int pe) {
#ifdef __CUDA_ARCH__
  tshmem::putmem<tshmem::thread_scope>(dest, src, nbytes, pe);
  return 0;
#else
  return tshmemi_host_putmem(dest, src, nbytes, pe);
#endif
}

TSHMEMI_HD int tshmem_getmem(void *dest, const void *src, size_t nbytes, int pe) {
#ifdef __CUDA_ARCH__
  tshmem::getmem<tshmem::thread_scope>(dest, src, nbytes, pe);
  return 0;
#else
  return tshmemi_host_getmem(dest, src, nbytes, pe);
#endif
}

TSHMEMI_HD void tshmem_quiet(void) {
#ifdef __CUDA_ARCH__
  tshmem::quiet();
#else
  tshmemi_host_quiet();
#endif
}

TSHMEMI_HD void tshmem_barrier_all(void) {
#ifdef __CUDA_ARCH__
  tshmem::barrier_all<tshmem::thread_scope>();
#else
  tshmemi_host_barrier_all();
#endif
}

TSHMEMI_HD void tshmem_sync_all(void) {
#ifdef __CUDA_ARCH__
  tshmem::sync_all<tshmem::thread_scope>();
#else
  tshmemi_host_sync_all();
#endif
}

TSHMEMI_HD int tshmem_team_my_pe(tshmem_team_t team) {
#ifdef __CUDA_ARCH__
  const tshmem::team_view v = tshmem::team_any_of(team);
  return v.size > 0 ? v.my_index : -1;
#else
  return tshmemi_host_team_my_pe(team);
#endif
}

TSHMEMI_HD int tshmem_team_n_pes(tshmem_team_t team) {
#ifdef __CUDA_ARCH__
  const tshmem::team_view v = tshmem::team_any_of(team);
  return v.size > 0 ? v.size : -1;
#else
  return tshmemi_host_team_n_pes(team);
#endif
}

TSHMEMI_HD int tshmem_team_translate_pe(tshmem_team_t src_team, int src_pe, tshmem_team_t dest_team) {
#ifdef __CUDA_ARCH__
  const tshmem::team_view src = tshmem::team_any_of(src_team), dest = tshmem::team_any_of(dest_team);
  if (src.size <= 0 || dest.size <= 0 || src_pe < 0 || src_pe >= src.size) return -1;
  const int offset = src.pe(src_pe) - dest.start;
  if (offset < 0 || offset % dest.stride != 0 || offset / dest.stride >= dest.size) return -1;
  return offset / dest.stride;
#else
  return tshmemi_host_team_translate_pe(src_team, src_pe, dest_team);
#endif
}

#undef TSHMEMI_HD
#endif  // TSHMEMI_HOST_DEVICE_NAMES

// The typed collectives and tshmem_barrier(team), one name on host and device too.
#include "tshmem/device/c_coll.cuh"

#endif  // TSHMEM_DEVICE_HOST_DEVICE_NAMES_CUH
