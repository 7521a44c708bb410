// The NVSHMEM backend of the device benchmarks (the twins): the same static functions as TshmemOps
// (ops_tshmem.cuh), forwarding to NVSHMEM's typed C names; the host calls come from HostBackend as there. Built only
// when NVSHMEM was found at configure time, with -rdc and a device link against libnvshmem_device.a
// (perftest/device/CMakeLists.txt).
#pragma once

#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "host_backend.h"
#include "perf_types.cuh"

namespace tshmem_perf {

/// NVSHMEM's typed names for the element types the benchmarks use (atomics on int and unsigned long use the
/// int32 / uint64 names, which every NVSHMEM AMO, the bitwise ones included, provides).
template <class T>
struct NvshmemTyped;

#define TSHMEM_PERF_NVSHMEM_RMA(T, N)                                         \
  static PERF_DEVICE void p(T *d, T v, int pe) { nvshmem_##N##_p(d, v, pe); } \
  static PERF_DEVICE T g(const T *s, int pe) { return nvshmem_##N##_g(s, pe); }
#define TSHMEM_PERF_NVSHMEM_AMO(T, N)                                                                                  \
  static PERF_DEVICE T fetch(T *d, int pe) { return nvshmem_##N##_atomic_fetch(d, pe); }                               \
  static PERF_DEVICE void set(T *d, T v, int pe) { nvshmem_##N##_atomic_set(d, v, pe); }                               \
  static PERF_DEVICE T compare_swap(T *d, T c, T v, int pe) { return nvshmem_##N##_atomic_compare_swap(d, c, v, pe); } \
  static PERF_DEVICE T swap(T *d, T v, int pe) { return nvshmem_##N##_atomic_swap(d, v, pe); }                         \
  static PERF_DEVICE T fetch_inc(T *d, int pe) { return nvshmem_##N##_atomic_fetch_inc(d, pe); }                       \
  static PERF_DEVICE void inc(T *d, int pe) { nvshmem_##N##_atomic_inc(d, pe); }                                       \
  static PERF_DEVICE T fetch_add(T *d, T v, int pe) { return nvshmem_##N##_atomic_fetch_add(d, v, pe); }               \
  static PERF_DEVICE void add(T *d, T v, int pe) { nvshmem_##N##_atomic_add(d, v, pe); }                               \
  static PERF_DEVICE T fetch_and(T *d, T v, int pe) { return nvshmem_##N##_atomic_fetch_and(d, v, pe); }               \
  static PERF_DEVICE void and_(T *d, T v, int pe) { nvshmem_##N##_atomic_and(d, v, pe); }                              \
  static PERF_DEVICE T fetch_or(T *d, T v, int pe) { return nvshmem_##N##_atomic_fetch_or(d, v, pe); }                 \
  static PERF_DEVICE void or_(T *d, T v, int pe) { nvshmem_##N##_atomic_or(d, v, pe); }                                \
  static PERF_DEVICE T fetch_xor(T *d, T v, int pe) { return nvshmem_##N##_atomic_fetch_xor(d, v, pe); }               \
  static PERF_DEVICE void xor_(T *d, T v, int pe) { nvshmem_##N##_atomic_xor(d, v, pe); }

template <>
struct NvshmemTyped<int> {
  TSHMEM_PERF_NVSHMEM_RMA(int, int)
  TSHMEM_PERF_NVSHMEM_AMO(int32_t, int32)
};
template <>
struct NvshmemTyped<long> {
  TSHMEM_PERF_NVSHMEM_RMA(long, long)
};
template <>
struct NvshmemTyped<unsigned long> {
  TSHMEM_PERF_NVSHMEM_AMO(uint64_t, uint64)
};
template <>
struct NvshmemTyped<unsigned long long> {
  TSHMEM_PERF_NVSHMEM_RMA(unsigned long long, ulonglong)
};
template <>
struct NvshmemTyped<float> {
  TSHMEM_PERF_NVSHMEM_RMA(float, float)
};
template <>
struct NvshmemTyped<double> {
  TSHMEM_PERF_NVSHMEM_RMA(double, double)
};
#undef TSHMEM_PERF_NVSHMEM_RMA
#undef TSHMEM_PERF_NVSHMEM_AMO

struct NvshmemOps : HostBackend {
  static constexpr const char *kHeapSizeVariable = "NVSHMEM_SYMMETRIC_SIZE";  ///< named when an allocation fails

  // ---- host (besides HostBackend's) ---------------------------------------------------------------------
  using HostBackend::barrier_all;
  static void *host_ptr(void *p, int pe) { return nvshmem_ptr(p, pe); }
  static uint64_t peer_base(int) { return 0; }  // NVSHMEM keeps its table private: the fan-out twin uses nvshmem_ptr
  static cudaError_t launch(const void *kernel, dim3 grid, dim3 block, void **args, cudaStream_t stream) {
    return nvshmemx_collective_launch(kernel, grid, block, args, 0, stream) == 0 ? cudaSuccess : cudaErrorLaunchFailure;
  }

  // ---- device: RMA ------------------------------------------------------------------------------------
  template <Scope S>
  static PERF_DEVICE void putmem_nbi(void *dest, const void *src, size_t bytes, int pe) {
    if constexpr (S == Scope::thread)
      nvshmem_putmem_nbi(dest, src, bytes, pe);
    else if constexpr (S == Scope::warp)
      nvshmemx_putmem_nbi_warp(dest, src, bytes, pe);
    else
      nvshmemx_putmem_nbi_block(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void putmem(void *dest, const void *src, size_t bytes, int pe) {
    if constexpr (S == Scope::thread)
      nvshmem_putmem(dest, src, bytes, pe);
    else if constexpr (S == Scope::warp)
      nvshmemx_putmem_warp(dest, src, bytes, pe);
    else
      nvshmemx_putmem_block(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void getmem_nbi(void *dest, const void *src, size_t bytes, int pe) {
    if constexpr (S == Scope::thread)
      nvshmem_getmem_nbi(dest, src, bytes, pe);
    else if constexpr (S == Scope::warp)
      nvshmemx_getmem_nbi_warp(dest, src, bytes, pe);
    else
      nvshmemx_getmem_nbi_block(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void getmem(void *dest, const void *src, size_t bytes, int pe) {
    if constexpr (S == Scope::thread)
      nvshmem_getmem(dest, src, bytes, pe);
    else if constexpr (S == Scope::warp)
      nvshmemx_getmem_warp(dest, src, bytes, pe);
    else
      nvshmemx_getmem_block(dest, src, bytes, pe);
  }
  template <class T>
  static PERF_DEVICE void p(T *dest, T value, int pe) {
    NvshmemTyped<T>::p(dest, value, pe);
  }
  template <class T>
  static PERF_DEVICE T g(const T *src, int pe) {
    return NvshmemTyped<T>::g(src, pe);
  }
  static PERF_DEVICE void quiet() { nvshmem_quiet(); }
  static PERF_DEVICE void fence() { nvshmem_fence(); }
  static PERF_DEVICE void *ptr(void *p, int pe) { return nvshmem_ptr(p, pe); }

  // ---- device: signals and waits ------------------------------------------------------------------------
  template <Scope S>
  static PERF_DEVICE void putmem_signal_nbi(void *dest, const void *src, size_t bytes, uint64_t *sig, uint64_t value,
                                            int pe) {
    if constexpr (S == Scope::thread)
      nvshmem_putmem_signal_nbi(dest, src, bytes, sig, value, NVSHMEM_SIGNAL_SET, pe);
    else if constexpr (S == Scope::warp)
      nvshmemx_putmem_signal_nbi_warp(dest, src, bytes, sig, value, NVSHMEM_SIGNAL_SET, pe);
    else
      nvshmemx_putmem_signal_nbi_block(dest, src, bytes, sig, value, NVSHMEM_SIGNAL_SET, pe);
  }
  static PERF_DEVICE void signal_set(uint64_t *sig, uint64_t value, int pe) {
    nvshmemx_signal_op(sig, value, NVSHMEM_SIGNAL_SET, pe);
  }
  static PERF_DEVICE uint64_t signal_wait_eq(uint64_t *sig, uint64_t value) {
    return nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, value);
  }
  static PERF_DEVICE void int_wait_eq(int *ivar, int value) { nvshmem_int_wait_until(ivar, NVSHMEM_CMP_EQ, value); }

  // ---- device: atomics --------------------------------------------------------------------------------
  template <Amo Op, class T>
  static PERF_DEVICE T amo(T *dest, T value, T cond, int pe) {
    using N = NvshmemTyped<T>;
    if constexpr (Op == Amo::fetch)
      return N::fetch(dest, pe);
    else if constexpr (Op == Amo::set)
      return N::set(dest, value, pe), T(0);
    else if constexpr (Op == Amo::compare_swap)
      return N::compare_swap(dest, cond, value, pe);
    else if constexpr (Op == Amo::swap)
      return N::swap(dest, value, pe);
    else if constexpr (Op == Amo::fetch_inc)
      return N::fetch_inc(dest, pe);
    else if constexpr (Op == Amo::inc)
      return N::inc(dest, pe), T(0);
    else if constexpr (Op == Amo::fetch_add)
      return N::fetch_add(dest, value, pe);
    else if constexpr (Op == Amo::add)
      return N::add(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_and)
      return N::fetch_and(dest, value, pe);
    else if constexpr (Op == Amo::and_)
      return N::and_(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_or)
      return N::fetch_or(dest, value, pe);
    else if constexpr (Op == Amo::or_)
      return N::or_(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_xor)
      return N::fetch_xor(dest, value, pe);
    else
      return N::xor_(dest, value, pe), T(0);
  }

  // ---- device: collectives ----------------------------------------------------------------------------
  template <Scope S>
  static PERF_DEVICE void barrier_all() {
    if constexpr (S == Scope::thread)
      nvshmem_barrier_all();
    else if constexpr (S == Scope::warp)
      nvshmemx_barrier_all_warp();
    else
      nvshmemx_barrier_all_block();
  }
  template <Scope S>
  static PERF_DEVICE void sync_all() {
    if constexpr (S == Scope::thread)
      nvshmem_sync_all();
    else if constexpr (S == Scope::warp)
      nvshmemx_sync_all_warp();
    else
      nvshmemx_sync_all_block();
  }

  // ---- device: peer-table reads (fan-out twin: NVSHMEM's own translation for both paths) ----------------
  /// NVSHMEM keeps its table private: a lookup is nvshmem_ptr of a symmetric `anchor` for PE idx % n_pes.
  static PERF_DEVICE uint64_t table_constant(const void *anchor, int idx) {
    return reinterpret_cast<uint64_t>(nvshmem_ptr(anchor, idx % nvshmem_n_pes()));
  }
  static PERF_DEVICE uint64_t table_global(const uint64_t *, const void *anchor, int idx) {
    return table_constant(anchor, idx);
  }
  template <class T>
  static PERF_DEVICE T *translate_constant(T *p, int pe) {
    return static_cast<T *>(nvshmem_ptr(p, pe));
  }
  template <class T>
  static PERF_DEVICE T *translate_global(T *p, int pe) {
    return static_cast<T *>(nvshmem_ptr(p, pe));
  }
};

}  // namespace tshmem_perf
