// The OpenSHMEM host calls of the benchmark that has an Open MPI twin (perftest/host/host_shmem.cc): one
// source, two libraries, the names one to one (tshmem_putmem <-> shmem_putmem). tshmem by default; Open MPI's
// OpenSHMEM (OSHMEM) when the unit is compiled with -DTSHMEM_PERF_OSHMEM and oshcc's flags
// (perftest/common/oshmem.cmake).
#pragma once

#include <algorithm>
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
/// The world's collectives. OSHMEM (OpenSHMEM 1.4) takes an active set and symmetric pSync / pWrk arrays: three
/// pSync arrays in turn, so a call never reuses one that a PE may still be in (each of these collectives needs every
/// PE's arrival, so a PE two calls ahead has seen every PE leave the call that used the array before).
class Collectives {
 public:
  bool setup(size_t max_floats) {
    for (long *&p : psync_) {
      p = static_cast<long *>(shmem_malloc(kSync * sizeof(long)));
      if (p == nullptr) return false;
      for (size_t i = 0; i < kSync; ++i) p[i] = SHMEM_SYNC_VALUE;
    }
    pwrk_ = static_cast<float *>(
        shmem_malloc(std::max<size_t>(max_floats / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) * sizeof(float)));
    shmem_barrier_all();
    return pwrk_ != nullptr;
  }
  void teardown() {
    shmem_free(pwrk_);
    for (long *p : psync_) shmem_free(p);
  }
  void sum_reduce(float *dst, const float *src, size_t n) {
    shmem_float_sum_to_all(dst, src, static_cast<int>(n), 0, 0, shmem_n_pes(), pwrk_, next());
  }
  void broadcast(void *dst, const void *src, size_t bytes, int root) {
    shmem_broadcast64(dst, src, bytes / 8, root, 0, 0, shmem_n_pes(), next());
  }
  void fcollect(void *dst, const void *src, size_t bytes) {
    shmem_fcollect64(dst, src, bytes / 8, 0, 0, shmem_n_pes(), next());
  }
  void alltoall(void *dst, const void *src, size_t bytes) {
    shmem_alltoall64(dst, src, bytes / 8, 0, 0, shmem_n_pes(), next());
  }

 private:
  static constexpr size_t kSync =
      std::max({static_cast<size_t>(SHMEM_REDUCE_SYNC_SIZE), static_cast<size_t>(SHMEM_BCAST_SYNC_SIZE),
                static_cast<size_t>(SHMEM_COLLECT_SYNC_SIZE), static_cast<size_t>(SHMEM_ALLTOALL_SYNC_SIZE)});
  long *next() {
    long *p = psync_[turn_];
    turn_ = (turn_ + 1) % 3;
    return p;
  }
  long *psync_[3] = {};
  float *pwrk_ = nullptr;
  int turn_ = 0;
};
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
/// The world's collectives: tshmem's OpenSHMEM 1.5 forms on TSHMEM_TEAM_WORLD (no pSync).
class Collectives {
 public:
  bool setup(size_t) { return true; }
  void teardown() {}
  void sum_reduce(float *dst, const float *src, size_t n) { tshmem_float_sum_reduce(TSHMEM_TEAM_WORLD, dst, src, n); }
  void broadcast(void *dst, const void *src, size_t bytes, int root) {
    tshmemi_host_broadcast(TSHMEM_TEAM_WORLD, dst, src, bytes, root);
  }
  void fcollect(void *dst, const void *src, size_t bytes) { tshmemi_host_fcollect(TSHMEM_TEAM_WORLD, dst, src, bytes); }
  void alltoall(void *dst, const void *src, size_t bytes) { tshmemi_host_alltoall(TSHMEM_TEAM_WORLD, dst, src, bytes); }
};
inline std::string describe() { return std::string("tshmem, backend ") + tshmemx_backend_name(); }
#endif

}  // namespace openshmem
}  // namespace tshmem_perf
