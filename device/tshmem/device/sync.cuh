/*
 * Ordering and collective synchronisation on the device: fence, quiet, sync_all, barrier_all.
 *
 *  - fence(): puts, p and atomics that the calling thread issued before it reach each target PE before the
 *    ones it issues after (`__threadfence_system` semantics, fence.sc.sys).
 *  - quiet(): every put, p, get_nbi and atomic that the calling thread issued is complete: puts visible to
 *    every PE, nbi gets landed. Over NVLink loads/stores this is the same fence; in a job that spans nodes it
 *    also waits until everything this PE posted to its proxy channel is complete at its target.
 *  - sync_all<Scope>(): every PE's group arrives before any leaves; writes that a calling thread made before
 *    its call (local or to peers, through the group barrier) are visible to every PE's group after it.
 *    Called by exactly one group per PE (one thread, one warp or one block), by all PEs, the same number
 *    of times in the same order as the other device syncs (the counters are epochs that never reset).
 *  - barrier_all<Scope>(): quiet() by every calling thread, then sync_all.
 *  - sync_all_grid() / barrier_all_grid(): called by every thread of every block of one grid per PE. The
 *    grid variant REQUIRES all blocks of the grid to be co-resident (a cooperative launch,
 *    cudaLaunchCooperativeKernel, guarantees it; a grid no larger than what fits at once works too);
 *    otherwise it deadlocks. Only one grid per PE may be inside a grid barrier at a time.
 * Waits inside honour the wait timeout of the state (trap with a message).
 * The counters live in tshmem's internal region at the start of every heap (TSHMEM_INTERNAL_HEAP_BYTES,
 * zeroed at init): see internal_regions.h for the layout.
 */
#ifndef TSHMEM_DEVICE_SYNC_CUH
#define TSHMEM_DEVICE_SYNC_CUH

#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// Orders the calling thread's earlier puts/p/atomics to each PE before its later ones (system scope).
TSHMEMI_DEVICE void fence();

/// Completes the calling thread's earlier puts/p/atomics/get_nbi (system scope).
TSHMEMI_DEVICE void quiet(const tshmemi_device_state &st = tshmemi::state());

/// Synchronises one group (Scope) on every PE; see above.
template <class Scope = block_scope>
TSHMEMI_DEVICE void sync_all(const tshmemi_device_state &st = tshmemi::state());

/// quiet() + sync_all<Scope>().
template <class Scope = block_scope>
TSHMEMI_DEVICE void barrier_all(const tshmemi_device_state &st = tshmemi::state());

/// Whole-grid sync_all: every thread of every (co-resident) block calls.
TSHMEMI_DEVICE void sync_all_grid(const tshmemi_device_state &st = tshmemi::state());

/// Whole-grid barrier_all: quiet() by every thread, then sync_all_grid().
TSHMEMI_DEVICE void barrier_all_grid(const tshmemi_device_state &st = tshmemi::state());

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/sync.cuh"

#endif  // TSHMEM_DEVICE_SYNC_CUH
