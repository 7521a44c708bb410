/*
 * Point-to-point synchronisation on local symmetric variables: wait_until and test.
 *
 * T is a 32- or 64-bit integer (int32, uint32, int64, uint64 and their C spellings). `cmp` is one of
 * TSHMEM_CMP_EQ, NE, GT, GE, LT, LE (another value traps with a message). The variable is read with
 * ld.acquire.sys, so once the condition holds, every write that a peer made before the write that satisfied
 * it (put_signal data, a put followed by fence, an atomic) is visible to the calling thread.
 * With a wait timeout in the state (TSHMEM_WAIT_TIMEOUT_MS), a wait longer than that traps with a message
 * naming the address, the expected and the found value. Any thread may call; each caller waits on its own.
 */
#ifndef TSHMEM_DEVICE_WAIT_CUH
#define TSHMEM_DEVICE_WAIT_CUH

#include "tshmem/device/state.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// Blocks until `*ivar cmp value`; returns the value that satisfied it.
template <class T>
TSHMEMI_DEVICE T wait_until(const T *ivar, int cmp, nondeduced_t<T> value,
                            const tshmemi_device_state &st = tshmemi::state());

/// One acquire read: true if `*ivar cmp value` holds now.
template <class T>
TSHMEMI_DEVICE bool test(const T *ivar, int cmp, nondeduced_t<T> value,
                         const tshmemi_device_state &st = tshmemi::state());

/// The bound of every device wait, TSHMEM_WAIT_TIMEOUT_MS, in nanoseconds (0: waits are unbounded): for a kernel that
/// waits in a loop of its own, with its own action past the bound, and keeps the job's bound.
TSHMEMI_DEVICE uint64_t wait_timeout_ns(const tshmemi_device_state &st = tshmemi::state());

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/wait.cuh"

#endif  // TSHMEM_DEVICE_WAIT_CUH
