// The tshmem backend of the device benchmarks: every operation a benchmark kernel or its host loop calls,
// as static functions with the same names and shapes as NvshmemOps (ops_nvshmem.cuh); the host calls the host
// benchmarks use too (init, malloc, barrier_all...) come from HostBackend. Kernels are templates over the
// backend, so one kernel source builds against either library.
#pragma once

#include <mpi.h>

#include "host_backend.h"
#include "perf_types.cuh"
#include "tshmem/device/tshmem_device.cuh"
#include "tshmem/tshmem.h"

namespace tshmem_perf {

struct TshmemOps : HostBackend {
  static constexpr const char *kHeapSizeVariable = "TSHMEM_SYMMETRIC_SIZE";  ///< named when an allocation fails

  // ---- host (besides HostBackend's) ---------------------------------------------------------------------
  using HostBackend::barrier_all;
  static void *host_ptr(void *p, int pe) { return tshmem_ptr(p, pe); }
  /// Where this PE sees `pe`'s heap (the peer table slot), for the fan-out benchmark's table copy.
  static uint64_t peer_base(int pe) { return reinterpret_cast<uint64_t>(tshmemx_peer_base(pe)); }
  /// Kernels that need every PE's kernel running at once (ping-pong, device barriers): a cooperative launch,
  /// which also guarantees the co-residency that grid_sync needs.
  static cudaError_t launch(const void *kernel, dim3 grid, dim3 block, void **args, cudaStream_t stream) {
    return cudaLaunchCooperativeKernel(kernel, grid, block, args, 0, stream);
  }

  // ---- device: RMA ------------------------------------------------------------------------------------
  template <Scope S>
  using scope_t = std::conditional_t<S == Scope::thread, tshmem::thread_scope,
                                     std::conditional_t<S == Scope::warp, tshmem::warp_scope, tshmem::block_scope>>;

  template <Scope S>
  static PERF_DEVICE void putmem_nbi(void *dest, const void *src, size_t bytes, int pe) {
    tshmem::putmem_nbi<scope_t<S>>(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void putmem(void *dest, const void *src, size_t bytes, int pe) {
    tshmem::putmem<scope_t<S>>(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void getmem_nbi(void *dest, const void *src, size_t bytes, int pe) {
    tshmem::getmem_nbi<scope_t<S>>(dest, src, bytes, pe);
  }
  template <Scope S>
  static PERF_DEVICE void getmem(void *dest, const void *src, size_t bytes, int pe) {
    tshmem::getmem<scope_t<S>>(dest, src, bytes, pe);
  }
  template <class T>
  static PERF_DEVICE void p(T *dest, T value, int pe) {
    tshmem::p(dest, value, pe);
  }
  template <class T>
  static PERF_DEVICE T g(const T *src, int pe) {
    return tshmem::g(src, pe);
  }
  static PERF_DEVICE void quiet() { tshmem::quiet(); }
  static PERF_DEVICE void fence() { tshmem::fence(); }
  static PERF_DEVICE void *ptr(void *p, int pe) { return tshmem::ptr(p, pe); }

  // ---- device: signals and waits ------------------------------------------------------------------------
  template <Scope S>
  static PERF_DEVICE void putmem_signal_nbi(void *dest, const void *src, size_t bytes, uint64_t *sig, uint64_t value,
                                            int pe) {
    tshmem::putmem_signal_nbi<scope_t<S>>(dest, src, bytes, sig, value, TSHMEM_SIGNAL_SET, pe);
  }
  static PERF_DEVICE void signal_set(uint64_t *sig, uint64_t value, int pe) {
    tshmem::signal_op(sig, value, TSHMEM_SIGNAL_SET, pe);
  }
  static PERF_DEVICE uint64_t signal_wait_eq(uint64_t *sig, uint64_t value) {
    return tshmem::signal_wait_until(sig, TSHMEM_CMP_EQ, value);
  }
  static PERF_DEVICE void int_wait_eq(int *ivar, int value) { tshmem::wait_until(ivar, TSHMEM_CMP_EQ, value); }

  // ---- device: atomics --------------------------------------------------------------------------------
  /// One remote atomic; `value` and `cond` as the operation needs them. Returns the fetched value (or 0).
  template <Amo Op, class T>
  static PERF_DEVICE T amo(T *dest, T value, T cond, int pe) {
    if constexpr (Op == Amo::fetch)
      return tshmem::atomic_fetch(dest, pe);
    else if constexpr (Op == Amo::set)
      return tshmem::atomic_set(dest, value, pe), T(0);
    else if constexpr (Op == Amo::compare_swap)
      return tshmem::atomic_compare_swap(dest, cond, value, pe);
    else if constexpr (Op == Amo::swap)
      return tshmem::atomic_swap(dest, value, pe);
    else if constexpr (Op == Amo::fetch_inc)
      return tshmem::atomic_fetch_inc(dest, pe);
    else if constexpr (Op == Amo::inc)
      return tshmem::atomic_inc(dest, pe), T(0);
    else if constexpr (Op == Amo::fetch_add)
      return tshmem::atomic_fetch_add(dest, value, pe);
    else if constexpr (Op == Amo::add)
      return tshmem::atomic_add(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_and)
      return tshmem::atomic_fetch_and(dest, value, pe);
    else if constexpr (Op == Amo::and_)
      return tshmem::atomic_and(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_or)
      return tshmem::atomic_fetch_or(dest, value, pe);
    else if constexpr (Op == Amo::or_)
      return tshmem::atomic_or(dest, value, pe), T(0);
    else if constexpr (Op == Amo::fetch_xor)
      return tshmem::atomic_fetch_xor(dest, value, pe);
    else
      return tshmem::atomic_xor(dest, value, pe), T(0);
  }

  // ---- device: collectives ----------------------------------------------------------------------------
  template <Scope S>
  static PERF_DEVICE void barrier_all() {
    tshmem::barrier_all<scope_t<S>>();
  }
  template <Scope S>
  static PERF_DEVICE void sync_all() {
    tshmem::sync_all<scope_t<S>>();
  }

  // ---- device: the two peer-table read paths (fan-out benchmark) ---------------------------------------
  /// Entry `idx` of this unit's constant copy of the table (LDC: one access per distinct address in a warp).
  /// (`anchor`: unused here; the NVSHMEM twin translates it instead.)
  static PERF_DEVICE uint64_t table_constant(const void *, int idx) { return tshmemi::state().peer_base[idx]; }
  /// Entry `idx` of a global-memory table through the read-only cache (what remote_ptr_lane does).
  static PERF_DEVICE uint64_t table_global(const uint64_t *table, const void *, int idx) { return __ldg(table + idx); }
  /// The library's own translations: uniform-PE path (constant table) and per-lane path (global mirror).
  template <class T>
  static PERF_DEVICE T *translate_constant(T *p, int pe) {
    return tshmemi::remote_ptr(p, pe, "perftest fanout", tshmemi::state());
  }
  template <class T>
  static PERF_DEVICE T *translate_global(T *p, int pe) {
    return tshmemi::remote_ptr_lane(p, pe, "perftest fanout", tshmemi::state());
  }
};

}  // namespace tshmem_perf
