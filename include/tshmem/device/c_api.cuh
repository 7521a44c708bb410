/*
 * The OpenSHMEM-style C names of the device API: one-line wrappers over the tshmem:: templates, stamped out
 * from the type lists below (no logic in the macros; contracts are those of the templates: rma.cuh,
 * signal.cuh, wait.cuh, amo.cuh, sync.cuh). They always read this unit's constant state.
 *
 *   tshmem_<T>_p / _g                          tshmem_<T>_{put,get}[_nbi][_warp|_block]
 *   tshmem_{put,get}mem[_nbi][_warp|_block]    tshmem_<T>_put_signal[_nbi], tshmem_putmem_signal[_nbi][_warp|_block]
 *   tshmem_signal_wait_until, tshmem_signal_fetch, tshmem_signal_op
 *   tshmem_<T>_wait_until, tshmem_<T>_test
 *   tshmem_<T>_atomic_{fetch,set,swap,compare_swap,fetch_add,add,fetch_inc,inc}
 *   tshmem_<T>_atomic_[fetch_]{and,or,xor}     (bitwise types)
 *   tshmem_fence, tshmem_{barrier,sync}_all_{warp,block,grid}
 *
 * The eight names that the host C API also has (tshmem_my_pe, tshmem_n_pes, tshmem_ptr, tshmem_putmem,
 * tshmem_getmem, tshmem_quiet, tshmem_barrier_all, tshmem_sync_all) are defined once for host and device
 * in host_device_names.cuh, part of tshmem/tshmem.h (which tshmem/device/tshmem_device.cuh includes), not here.
 */
#ifndef TSHMEM_DEVICE_C_API_CUH
#define TSHMEM_DEVICE_C_API_CUH

#include "tshmem/device/amo.cuh"
#include "tshmem/device/pe.cuh"
#include "tshmem/device/rma.cuh"
#include "tshmem/device/signal.cuh"
#include "tshmem/device/sync.cuh"
#include "tshmem/device/wait.cuh"
#include "tshmem/tshmemx_typed.h"  // TSHMEMI_REPT_FOR_MOVE_TYPES

// clang-format off
/// OpenSHMEM standard RMA types: X(C type, name). The same list as the moving collectives' (tshmemx_typed.h).
#define TSHMEMI_REPT_FOR_RMA_TYPES(X) TSHMEMI_REPT_FOR_MOVE_TYPES(X)

/// 32/64-bit integer types: standard AMOs and point-to-point synchronisation.
#define TSHMEMI_REPT_FOR_INT_TYPES(X)                                                        \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)                     \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)                 \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                  \
  X(ptrdiff_t, ptrdiff)

/// Bitwise AMO types.
#define TSHMEMI_REPT_FOR_BITWISE_TYPES(X)                                                    \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/// Extended AMO types (fetch, set, swap only).
#define TSHMEMI_REPT_FOR_EXTENDED_AMO_TYPES(X) X(float, float) X(double, double)
// clang-format on

#ifdef TSHMEM_DEVICE_COMPILE
#define TSHMEMI_C static __device__ __forceinline__

// ---- RMA -----------------------------------------------------------------------------------------------
#define TSHMEMI_RMA_SCOPED(T, N, SUFFIX, SCOPE)                                                                    \
  TSHMEMI_C void tshmem_##N##_put##SUFFIX(T *d, const T *s, size_t n, int pe) { tshmem::put<SCOPE>(d, s, n, pe); } \
  TSHMEMI_C void tshmem_##N##_put_nbi##SUFFIX(T *d, const T *s, size_t n, int pe) {                                \
    tshmem::put_nbi<SCOPE>(d, s, n, pe);                                                                           \
  }                                                                                                                \
  TSHMEMI_C void tshmem_##N##_get##SUFFIX(T *d, const T *s, size_t n, int pe) { tshmem::get<SCOPE>(d, s, n, pe); } \
  TSHMEMI_C void tshmem_##N##_get_nbi##SUFFIX(T *d, const T *s, size_t n, int pe) {                                \
    tshmem::get_nbi<SCOPE>(d, s, n, pe);                                                                           \
  }
#define TSHMEMI_RMA(T, N)                                                                                             \
  TSHMEMI_C void tshmem_##N##_p(T *d, T v, int pe) { tshmem::p(d, v, pe); }                                           \
  TSHMEMI_C T tshmem_##N##_g(const T *s, int pe) { return tshmem::g(s, pe); }                                         \
  TSHMEMI_C void tshmem_##N##_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) {     \
    tshmem::put_signal(d, s, n, sig, v, op, pe);                                                                      \
  }                                                                                                                   \
  TSHMEMI_C void tshmem_##N##_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
    tshmem::put_signal_nbi(d, s, n, sig, v, op, pe);                                                                  \
  }                                                                                                                   \
  TSHMEMI_RMA_SCOPED(T, N, , tshmem::thread_scope)                                                                    \
  TSHMEMI_RMA_SCOPED(T, N, _warp, tshmem::warp_scope)                                                                 \
  TSHMEMI_RMA_SCOPED(T, N, _block, tshmem::block_scope)
TSHMEMI_REPT_FOR_RMA_TYPES(TSHMEMI_RMA)

#define TSHMEMI_MEM_SCOPED(SUFFIX, SCOPE)                                                                              \
  TSHMEMI_C void tshmem_putmem_nbi##SUFFIX(void *d, const void *s, size_t n, int pe) {                                 \
    tshmem::putmem_nbi<SCOPE>(d, s, n, pe);                                                                            \
  }                                                                                                                    \
  TSHMEMI_C void tshmem_getmem_nbi##SUFFIX(void *d, const void *s, size_t n, int pe) {                                 \
    tshmem::getmem_nbi<SCOPE>(d, s, n, pe);                                                                            \
  }                                                                                                                    \
  TSHMEMI_C void tshmem_putmem_signal##SUFFIX(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op,     \
                                              int pe) {                                                                \
    tshmem::putmem_signal<SCOPE>(d, s, n, sig, v, op, pe);                                                             \
  }                                                                                                                    \
  TSHMEMI_C void tshmem_putmem_signal_nbi##SUFFIX(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, \
                                                  int pe) {                                                            \
    tshmem::putmem_signal_nbi<SCOPE>(d, s, n, sig, v, op, pe);                                                         \
  }
TSHMEMI_MEM_SCOPED(, tshmem::thread_scope)
TSHMEMI_MEM_SCOPED(_warp, tshmem::warp_scope)
TSHMEMI_MEM_SCOPED(_block, tshmem::block_scope)
// Blocking putmem/getmem, warp and block; the thread-scope names are in host_device_names.cuh.
TSHMEMI_C void tshmem_putmem_warp(void *d, const void *s, size_t n, int pe) {
  tshmem::putmem<tshmem::warp_scope>(d, s, n, pe);
}
TSHMEMI_C void tshmem_putmem_block(void *d, const void *s, size_t n, int pe) {
  tshmem::putmem<tshmem::block_scope>(d, s, n, pe);
}
TSHMEMI_C void tshmem_getmem_warp(void *d, const void *s, size_t n, int pe) {
  tshmem::getmem<tshmem::warp_scope>(d, s, n, pe);
}
TSHMEMI_C void tshmem_getmem_block(void *d, const void *s, size_t n, int pe) {
  tshmem::getmem<tshmem::block_scope>(d, s, n, pe);
}

// ---- Signals and waits ---------------------------------------------------------------------------------
TSHMEMI_C uint64_t tshmem_signal_wait_until(const uint64_t *sig, int cmp, uint64_t v) {
  return tshmem::signal_wait_until(sig, cmp, v);
}
TSHMEMI_C uint64_t tshmem_signal_fetch(const uint64_t *sig) { return tshmem::signal_fetch(sig); }
TSHMEMI_C void tshmem_signal_op(uint64_t *sig, uint64_t v, int op, int pe) { tshmem::signal_op(sig, v, op, pe); }

#define TSHMEMI_WAIT(T, N)                                                                                      \
  TSHMEMI_C T tshmem_##N##_wait_until(const T *ivar, int cmp, T v) { return tshmem::wait_until(ivar, cmp, v); } \
  TSHMEMI_C int tshmem_##N##_test(const T *ivar, int cmp, T v) { return tshmem::test(ivar, cmp, v) ? 1 : 0; }
TSHMEMI_REPT_FOR_INT_TYPES(TSHMEMI_WAIT)

// ---- Atomics -------------------------------------------------------------------------------------------
#define TSHMEMI_AMO_EXTENDED(T, N)                                                                  \
  TSHMEMI_C T tshmem_##N##_atomic_fetch(const T *s, int pe) { return tshmem::atomic_fetch(s, pe); } \
  TSHMEMI_C void tshmem_##N##_atomic_set(T *d, T v, int pe) { tshmem::atomic_set(d, v, pe); }       \
  TSHMEMI_C T tshmem_##N##_atomic_swap(T *d, T v, int pe) { return tshmem::atomic_swap(d, v, pe); }
#define TSHMEMI_AMO_STANDARD(T, N)                                                                            \
  TSHMEMI_AMO_EXTENDED(T, N)                                                                                  \
  TSHMEMI_C T tshmem_##N##_atomic_compare_swap(T *d, T c, T v, int pe) {                                      \
    return tshmem::atomic_compare_swap(d, c, v, pe);                                                          \
  }                                                                                                           \
  TSHMEMI_C T tshmem_##N##_atomic_fetch_add(T *d, T v, int pe) { return tshmem::atomic_fetch_add(d, v, pe); } \
  TSHMEMI_C void tshmem_##N##_atomic_add(T *d, T v, int pe) { tshmem::atomic_add(d, v, pe); }                 \
  TSHMEMI_C T tshmem_##N##_atomic_fetch_inc(T *d, int pe) { return tshmem::atomic_fetch_inc(d, pe); }         \
  TSHMEMI_C void tshmem_##N##_atomic_inc(T *d, int pe) { tshmem::atomic_inc(d, pe); }
#define TSHMEMI_AMO_BITWISE(T, N)                                                                             \
  TSHMEMI_C T tshmem_##N##_atomic_fetch_and(T *d, T v, int pe) { return tshmem::atomic_fetch_and(d, v, pe); } \
  TSHMEMI_C void tshmem_##N##_atomic_and(T *d, T v, int pe) { tshmem::atomic_and(d, v, pe); }                 \
  TSHMEMI_C T tshmem_##N##_atomic_fetch_or(T *d, T v, int pe) { return tshmem::atomic_fetch_or(d, v, pe); }   \
  TSHMEMI_C void tshmem_##N##_atomic_or(T *d, T v, int pe) { tshmem::atomic_or(d, v, pe); }                   \
  TSHMEMI_C T tshmem_##N##_atomic_fetch_xor(T *d, T v, int pe) { return tshmem::atomic_fetch_xor(d, v, pe); } \
  TSHMEMI_C void tshmem_##N##_atomic_xor(T *d, T v, int pe) { tshmem::atomic_xor(d, v, pe); }
TSHMEMI_REPT_FOR_INT_TYPES(TSHMEMI_AMO_STANDARD)
TSHMEMI_REPT_FOR_EXTENDED_AMO_TYPES(TSHMEMI_AMO_EXTENDED)
TSHMEMI_REPT_FOR_BITWISE_TYPES(TSHMEMI_AMO_BITWISE)

// ---- PE queries, ordering, barriers --------------------------------------------------------------------
TSHMEMI_C void tshmem_fence(void) { tshmem::fence(); }
TSHMEMI_C void tshmem_barrier_all_warp(void) { tshmem::barrier_all<tshmem::warp_scope>(); }
TSHMEMI_C void tshmem_barrier_all_block(void) { tshmem::barrier_all<tshmem::block_scope>(); }
TSHMEMI_C void tshmem_barrier_all_grid(void) { tshmem::barrier_all_grid(); }
TSHMEMI_C void tshmem_sync_all_warp(void) { tshmem::sync_all<tshmem::warp_scope>(); }
TSHMEMI_C void tshmem_sync_all_block(void) { tshmem::sync_all<tshmem::block_scope>(); }
TSHMEMI_C void tshmem_sync_all_grid(void) { tshmem::sync_all_grid(); }

#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_C_API_CUH
