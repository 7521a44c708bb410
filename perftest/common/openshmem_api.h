// The OpenSHMEM host calls of the benchmark that has an Open MPI twin (perftest/host/host_shmem.cc): one
// source, two libraries, the names one to one (tshmem_putmem <-> shmem_putmem). tshmem by default; Open MPI's
// OpenSHMEM (OSHMEM) when the unit is compiled with -DTSHMEM_PERF_OSHMEM and oshcc's flags
// (perftest/common/oshmem.cmake).
#pragma once

#include <cstddef>
#include <string>

#if defined(TSHMEM_PERF_OSHMEM)
#include <shmem.h>
#else
#include "tshmem/tshmem.h"
#endif

namespace tshmem_perf {
namespace openshmem {

#if defined(TSHMEM_PERF_OSHMEM)
constexpr const char *kLib = "oshmem";
/// 0 on success. OSHMEM's shmem_init has no status: it ends the job itself when it fails.
inline int init() {
  shmem_init();
  return 0;
}
inline const char *last_error() { return "see Open MPI's messages above"; }
inline void finalize() { shmem_finalize(); }
inline int my_pe() { return shmem_my_pe(); }
inline int n_pes() { return shmem_n_pes(); }
inline void *malloc(size_t bytes) { return shmem_malloc(bytes); }
inline void free(void *p) { shmem_free(p); }
inline void putmem(void *dest, const void *src, size_t bytes, int pe) { shmem_putmem(dest, src, bytes, pe); }
inline void getmem(void *dest, const void *src, size_t bytes, int pe) { shmem_getmem(dest, src, bytes, pe); }
inline void quiet() { shmem_quiet(); }
inline void barrier_all() { shmem_barrier_all(); }
inline std::string describe() {
  char name[SHMEM_MAX_NAME_LEN] = {};
  shmem_info_get_name(name);
  int major = 0, minor = 0;
  shmem_info_get_version(&major, &minor);
  return std::string(name) + " (OpenSHMEM " + std::to_string(major) + "." + std::to_string(minor) + ")";
}
#else
constexpr const char *kLib = "tshmem";
inline int init() { return tshmem_init(); }
inline const char *last_error() { return tshmemx_last_error(); }
inline void finalize() { tshmem_finalize(); }
inline int my_pe() { return tshmem_my_pe(); }
inline int n_pes() { return tshmem_n_pes(); }
inline void *malloc(size_t bytes) { return tshmem_malloc(bytes); }
inline void free(void *p) { tshmem_free(p); }
inline void putmem(void *dest, const void *src, size_t bytes, int pe) { tshmem_putmem(dest, src, bytes, pe); }
inline void getmem(void *dest, const void *src, size_t bytes, int pe) { tshmem_getmem(dest, src, bytes, pe); }
inline void quiet() { tshmem_quiet(); }
inline void barrier_all() { tshmem_barrier_all(); }
inline std::string describe() { return std::string("tshmem, backend ") + tshmemx_backend_name(); }
#endif

}  // namespace openshmem
}  // namespace tshmem_perf
