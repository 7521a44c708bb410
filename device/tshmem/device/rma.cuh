/*
 * Remote memory access: p/g (one element), put/get (any size and alignment) in thread, warp and block
 * scope, blocking and non-blocking (_nbi).
 *
 * Completion and ordering (OpenSHMEM semantics over NVLink loads and stores):
 *  - A blocking put returns, in every calling thread, when the source may be reused; the data is visible at
 *    the target after quiet() (or a barrier), and fence() orders it before later puts to the same PE.
 *  - A blocking get returns, in every calling thread, with the whole destination filled.
 *  - _nbi variants return at once and make no promise about the group: the data is complete (put: source
 *    reusable, visible at the target; get: destination filled) after quiet() by the calling threads.
 * Scopes: thread_scope (default) - one thread; warp_scope - all 32 lanes, converged, same arguments;
 * block_scope - all threads of the block, same arguments (blocking calls end with __syncthreads()).
 * `dest` (put, p) or `src` (get, g) is a symmetric address; `pe` is checked (see remote_ptr.cuh).
 * p/g name a PE per lane (read the global peer-table mirror); put/get read the uniform constant table.
 */
#ifndef TSHMEM_DEVICE_RMA_CUH
#define TSHMEM_DEVICE_RMA_CUH

#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// Stores `value` at `dest` on `pe`. One thread; lanes may name different PEs.
template <class T>
TSHMEMI_DEVICE void p(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st = tshmemi::state());

/// Loads `src` on `pe` (a volatile load: never hoisted out of a loop). One thread; lanes may differ in PE.
template <class T>
TSHMEMI_DEVICE T g(const T *src, int pe, const tshmemi_device_state &st = tshmemi::state());

/// Copies `nelems` elements from local `src` to symmetric `dest` on `pe`; blocking (see above).
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void put(T *dest, const T *src, size_t nelems, int pe,
                        const tshmemi_device_state &st = tshmemi::state());

/// As put, non-blocking: complete after quiet().
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void put_nbi(T *dest, const T *src, size_t nelems, int pe,
                            const tshmemi_device_state &st = tshmemi::state());

/// Copies `nelems` elements from symmetric `src` on `pe` to local `dest`; blocking.
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void get(T *dest, const T *src, size_t nelems, int pe,
                        const tshmemi_device_state &st = tshmemi::state());

/// As get, non-blocking: `dest` is filled after quiet().
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void get_nbi(T *dest, const T *src, size_t nelems, int pe,
                            const tshmemi_device_state &st = tshmemi::state());

/// Byte versions (putmem/getmem): `nbytes` bytes, any alignment.
template <class Scope = thread_scope>
TSHMEMI_DEVICE void putmem(void *dest, const void *src, size_t nbytes, int pe,
                           const tshmemi_device_state &st = tshmemi::state());
template <class Scope = thread_scope>
TSHMEMI_DEVICE void putmem_nbi(void *dest, const void *src, size_t nbytes, int pe,
                               const tshmemi_device_state &st = tshmemi::state());
template <class Scope = thread_scope>
TSHMEMI_DEVICE void getmem(void *dest, const void *src, size_t nbytes, int pe,
                           const tshmemi_device_state &st = tshmemi::state());
template <class Scope = thread_scope>
TSHMEMI_DEVICE void getmem_nbi(void *dest, const void *src, size_t nbytes, int pe,
                               const tshmemi_device_state &st = tshmemi::state());

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/rma.cuh"

#endif  // TSHMEM_DEVICE_RMA_CUH
