/*
 * Remote atomic memory operations at system scope (atom.*.sys through atomic*_system): atomic with respect
 * to every other tshmem atomic on the same word from any PE, and unordered with respect to other memory
 * operations (use fence/quiet, or put_signal, to order). One thread per call; lanes may name different PEs
 * (the address is translated through the global peer-table mirror).
 *
 * Types: 32- and 64-bit integers for every operation; additionally float and double for fetch, set and swap
 * (OpenSHMEM "extended" AMOs). Bitwise operations (and, or, xor) take unsigned types and int32/int64.
 * Increment/add wrap around in two's complement.
 */
#ifndef TSHMEM_DEVICE_AMO_CUH
#define TSHMEM_DEVICE_AMO_CUH

#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// Atomically reads `source` on `pe`.
template <class T>
TSHMEMI_DEVICE T atomic_fetch(const T *source, int pe, const tshmemi_device_state &st = tshmemi::state());
/// Atomically writes `value` to `dest` on `pe`.
template <class T>
TSHMEMI_DEVICE void atomic_set(T *dest, nondeduced_t<T> value, int pe,
                               const tshmemi_device_state &st = tshmemi::state());
/// Writes `value`, returns the previous value.
template <class T>
TSHMEMI_DEVICE T atomic_swap(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st = tshmemi::state());
/// Writes `value` if the current value equals `cond`; returns the previous value either way.
template <class T>
TSHMEMI_DEVICE T atomic_compare_swap(T *dest, nondeduced_t<T> cond, nondeduced_t<T> value, int pe,
                                     const tshmemi_device_state &st = tshmemi::state());
/// Adds `value`, returns the previous value / returns nothing.
template <class T>
TSHMEMI_DEVICE T atomic_fetch_add(T *dest, nondeduced_t<T> value, int pe,
                                  const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void atomic_add(T *dest, nondeduced_t<T> value, int pe,
                               const tshmemi_device_state &st = tshmemi::state());
/// Adds one, returns the previous value / returns nothing.
template <class T>
TSHMEMI_DEVICE T atomic_fetch_inc(T *dest, int pe, const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void atomic_inc(T *dest, int pe, const tshmemi_device_state &st = tshmemi::state());
/// Bitwise and/or/xor with `value`, returning the previous value (fetch_) or nothing.
template <class T>
TSHMEMI_DEVICE T atomic_fetch_and(T *dest, nondeduced_t<T> value, int pe,
                                  const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void atomic_and(T *dest, nondeduced_t<T> value, int pe,
                               const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE T atomic_fetch_or(T *dest, nondeduced_t<T> value, int pe,
                                 const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void atomic_or(T *dest, nondeduced_t<T> value, int pe,
                              const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE T atomic_fetch_xor(T *dest, nondeduced_t<T> value, int pe,
                                  const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void atomic_xor(T *dest, nondeduced_t<T> value, int pe,
                               const tshmemi_device_state &st = tshmemi::state());

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/amo.cuh"

#endif  // TSHMEM_DEVICE_AMO_CUH
