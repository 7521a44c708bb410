// Bodies of tshmem/device/sync.cuh.
#ifndef TSHMEM_DEVICE_IMPL_SYNC_CUH
#define TSHMEM_DEVICE_IMPL_SYNC_CUH

#include "tshmem/device/impl/epoch_barrier.cuh"
#include "tshmem/device/impl/group.cuh"
#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/rma.cuh"
#include "tshmem/device/impl/transfer.cuh"
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/remote_ptr.cuh"
#include "tshmem/device/wait.cuh"  // the declarations with their default arguments, then the bodies

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

template <class T>
TSHMEMI_DEVICE T *internal_slot(size_t offset, const tshmemi_device_state &st) {
  return reinterpret_cast<T *>(own_heap_base(st) + offset);
}

/// The barrier of every PE (the epoch barrier, impl/epoch_barrier.cuh). A PE of another node gets the arrival
/// through the proxy after everything posted before it (ticket order, then MPI's pair order), so it also carries
/// quiet's meaning for those.
template <class Scope>
TSHMEMI_DEVICE void sync_pes(const char *call, const tshmemi_device_state &st) {
  const auto words = [&st] {
    return barrier_words{internal_slot<volatile uint64_t>(TSHMEMI_SYNC_EPOCH_OFFSET, st),
                         internal_slot<uint64_t>(TSHMEMI_SYNC_ARRIVAL_OFFSET, st)};
  };
  epoch_barrier<Scope, barrier_reach::any>(
      words, st.my_pe, st.n_pes, [](int k) { return k; }, call, st);
}

/// Grid-wide barrier among the blocks of one (co-resident) grid on this PE: the first thread of each block
/// arrives on a counter; the last arrival resets it and bumps the generation with a release; the others
/// wait for the generation with acquires. Fences at system scope so that what one block observed from peers
/// is passed on to the others.
TSHMEMI_DEVICE void grid_barrier(const char *call, const tshmemi_device_state &st) {
  __syncthreads();
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
    unsigned *arrived = internal_slot<unsigned>(TSHMEMI_GRID_ARRIVED_OFFSET, st);
    unsigned *generation = internal_slot<unsigned>(TSHMEMI_GRID_GENERATION_OFFSET, st);
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    const unsigned current = load_acquire_sys(generation);  // cannot move on before this block arrives
    fence_acq_rel_sys();
    if (atomicAdd(arrived, 1u) == blocks - 1) {
      fence_acq_rel_sys();
      store_relaxed_sys(arrived, 0u);
      store_release_sys(generation, current + 1);
    } else {
      spin_until<unsigned>(generation, TSHMEM_CMP_NE, current, call, st);
    }
  }
  __syncthreads();
}

TSHMEMI_DEVICE bool is_first_block() { return blockIdx.x + blockIdx.y + blockIdx.z == 0; }

}  // namespace tshmemi

namespace tshmem {

TSHMEMI_DEVICE void fence() { __threadfence_system(); }

TSHMEMI_DEVICE void quiet(const tshmemi_device_state &st) { tshmemi::transfer::quiet(st); }

template <class Scope>
TSHMEMI_DEVICE void sync_all(const tshmemi_device_state &st) {
  tshmemi::sync_pes<Scope>(
      tshmemi::scoped_name<Scope>("tshmem_sync_all", "tshmem_sync_all_warp", "tshmem_sync_all_block"), st);
}

/// quiet() is carried by sync_pes itself: over NVLink every put/p/atomic/get_nbi is an ordinary load or store
/// done in program order, and the announcing release store (cumulative through the group barrier) makes every
/// calling thread's earlier writes visible to a peer before that peer sees the epoch; a per-thread fence.sc.sys
/// in front would only add a second system fence to the critical path.
template <class Scope>
TSHMEMI_DEVICE void barrier_all(const tshmemi_device_state &st) {
  tshmemi::sync_pes<Scope>(
      tshmemi::scoped_name<Scope>("tshmem_barrier_all", "tshmem_barrier_all_warp", "tshmem_barrier_all_block"), st);
}

TSHMEMI_DEVICE void sync_all_grid(const tshmemi_device_state &st) {
  tshmemi::grid_barrier("tshmem_sync_all_grid", st);
  if (tshmemi::is_first_block()) tshmemi::sync_pes<block_scope>("tshmem_sync_all_grid", st);
  tshmemi::grid_barrier("tshmem_sync_all_grid", st);
}

TSHMEMI_DEVICE void barrier_all_grid(const tshmemi_device_state &st) {
  tshmemi::grid_barrier("tshmem_barrier_all_grid", st);
  if (tshmemi::is_first_block()) tshmemi::sync_pes<block_scope>("tshmem_barrier_all_grid", st);
  tshmemi::grid_barrier("tshmem_barrier_all_grid", st);
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_SYNC_CUH
