// Layout of tshmem's internal region: the first TSHMEM_INTERNAL_HEAP_BYTES of every PE's heap, zeroed by
// tshmem_init. The device API uses the first 16 KiB; the rest is free for the host runtime.
//
//   [0, 8 KiB)        uint64 sync_arrival[TSHMEM_MAX_PES]  slot j: the last sync epoch PE j announced here
//   8 KiB             uint64 sync_epoch                    syncs this PE has completed (its own leader only)
//   8 KiB + 128       uint32 grid_arrived                  blocks arrived at the current grid barrier
//   8 KiB + 256       uint32 grid_generation               grid barriers completed on this PE
#ifndef TSHMEM_DEVICE_IMPL_INTERNAL_HEAP_CUH
#define TSHMEM_DEVICE_IMPL_INTERNAL_HEAP_CUH

#include "tshmem/device/defines.cuh"

namespace tshmemi {
namespace internal_heap {

constexpr size_t kSyncArrival = 0;
constexpr size_t kSyncEpoch = kSyncArrival + 8 * TSHMEM_MAX_PES;
constexpr size_t kGridArrived = kSyncEpoch + 128;
constexpr size_t kGridGeneration = kGridArrived + 128;
constexpr size_t kDeviceBytes = 16 * 1024;

static_assert(kGridGeneration + 4 <= kDeviceBytes, "device sync counters overflow their 16 KiB");
static_assert(kDeviceBytes <= TSHMEM_INTERNAL_HEAP_BYTES, "device sync counters exceed the internal region");

}  // namespace internal_heap
}  // namespace tshmemi

#endif  // TSHMEM_DEVICE_IMPL_INTERNAL_HEAP_CUH
