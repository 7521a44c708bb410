// Device helpers of the data kernels: warp copies with 16-byte (or 4-byte) accesses, and the end of a send kernel
// (the last block to finish completes every block's transfers and signals every PE). Includes the device API.
#pragma once

#include <cstdint>

#include "tshmem/device/tshmem_device.cuh"

namespace tshmem_ep {

constexpr int kDataThreads = 256;
constexpr int kWarpsPerBlock = kDataThreads / 32;

/// `n` bytes, a multiple of 16, from `src` to `dst`, both 16-byte aligned (either may be a peer's memory); four
/// loads in flight per lane before their stores, so NVLink latency overlaps.
__device__ __forceinline__ void warp_copy16(void *dst, const void *src, size_t n, int lane) {
  uint4 *d = static_cast<uint4 *>(dst);
  const uint4 *s = static_cast<const uint4 *>(src);
  const size_t units = n / 16;
  size_t i = lane;
  for (; i + 96 < units; i += 128) {
    const uint4 a = s[i], b = s[i + 32], c = s[i + 64], e = s[i + 96];
    d[i] = a;
    d[i + 32] = b;
    d[i + 64] = c;
    d[i + 96] = e;
  }
  for (; i < units; i += 32) d[i] = s[i];
}

/// `words` 4-byte words.
__device__ __forceinline__ void warp_copy4(void *dst, const void *src, size_t words, int lane) {
  uint32_t *d = static_cast<uint32_t *>(dst);
  const uint32_t *s = static_cast<const uint32_t *>(src);
  for (size_t i = lane; i < words; i += 32) d[i] = s[i];
}

/// Called by every thread of every block of a send kernel after its transfers. Each block's thread 0 makes the
/// block's stores visible system-wide (fence after the block barrier) and counts the block in; the last block
/// completes everything this PE posted (tshmem::quiet: the fence, and across nodes the proxy's completion of every
/// request, any block's) and sets `sig[my_pe] = 1` on every PE. The counter is reset for the next launch.
__device__ __forceinline__ void finish_and_signal(unsigned *counter, uint64_t *sig, int my_pe, int n_pes) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();
  const unsigned prev = atomicAdd(counter, 1u);
  if (prev != gridDim.x - 1) return;
  *counter = 0;
  __threadfence_system();
  tshmem::quiet();
  for (int q = 0; q < n_pes; ++q) tshmem::signal_op(sig + my_pe, 1, TSHMEM_SIGNAL_SET, q);
}

}  // namespace tshmem_ep
