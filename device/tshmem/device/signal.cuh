/*
 * Put with signal: data, then a 64-bit signal word at the target, ordered so that a receiver that sees the
 * signal (signal_wait_until, or any acquire read) sees the data.
 *
 * `sig_addr` is a symmetric uint64_t; `sig_op` is TSHMEM_SIGNAL_SET (the word becomes `signal`) or
 * TSHMEM_SIGNAL_ADD (atomic add); another value traps. Ordering: the calling group's data writes, then a
 * group barrier, then one thread issues fence.acq_rel.sys and the signal as a system-scope release
 * (st.release.sys / red.release.sys.add). Over NVLink loads and stores the blocking and _nbi forms behave
 * the same (the signal itself carries completion); _nbi exists for OpenSHMEM code.
 * Scopes as in rma.cuh; all threads of the group pass the same arguments.
 */
#ifndef TSHMEM_DEVICE_SIGNAL_CUH
#define TSHMEM_DEVICE_SIGNAL_CUH

#include "tshmem/device/rma.cuh"
#include "tshmem/device/wait.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// put of `nelems` elements to `pe`, then the signal on `pe`.
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void put_signal(T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op,
                               int pe, const tshmemi_device_state &st = tshmemi::state());
template <class Scope = thread_scope, class T>
TSHMEMI_DEVICE void put_signal_nbi(T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                   int sig_op, int pe, const tshmemi_device_state &st = tshmemi::state());

/// Byte versions.
template <class Scope = thread_scope>
TSHMEMI_DEVICE void putmem_signal(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                  int sig_op, int pe, const tshmemi_device_state &st = tshmemi::state());
template <class Scope = thread_scope>
TSHMEMI_DEVICE void putmem_signal_nbi(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                      int sig_op, int pe, const tshmemi_device_state &st = tshmemi::state());

/// The signal alone (release at system scope, ordered after the caller's earlier writes). One thread.
TSHMEMI_DEVICE void signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                              const tshmemi_device_state &st = tshmemi::state());

/// Waits until the local signal word satisfies `*sig_addr cmp cmp_value` (see wait.cuh); returns its value.
TSHMEMI_DEVICE uint64_t signal_wait_until(const uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                          const tshmemi_device_state &st = tshmemi::state());

/// Reads the local signal word (acquire).
TSHMEMI_DEVICE uint64_t signal_fetch(const uint64_t *sig_addr);

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/signal.cuh"

#endif  // TSHMEM_DEVICE_SIGNAL_CUH
