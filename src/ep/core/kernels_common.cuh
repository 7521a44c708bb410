// Device helpers of the data kernels: warp copies with 16-byte (or 4-byte) accesses, and the end of a send kernel
// (the last block to finish completes every block's transfers and signals every PE). Includes the device API.
#pragma once

#include <cstdint>

#include "tshmem/device/tshmem_device.cuh"

namespace tshmem_ep {

constexpr int kDataThreads = 256;
constexpr int kWarpsPerBlock = kDataThreads / 32;

/// Loads in flight per lane in warp_copy16: a whole fp8 row of hidden 7168 (14 units per lane) takes two round trips.
/// A block's 8 warps then keep 32 KiB in flight per SM, about what HBM's bandwidth times its latency needs (with 4
/// in flight, and the tail of a row one load at a time, the data kernels ran at a quarter of the copy bandwidth).
constexpr int kCopyLoads = 8;

/// `n` bytes, a multiple of 16, from `src` to `dst`, both 16-byte aligned (either may be a peer's memory): batches of
/// kCopyLoads loads per lane, all issued before their stores (the last batch predicated), so memory and NVLink
/// latency overlap.
__device__ __forceinline__ void warp_copy16(void *dst, const void *src, size_t n, int lane) {
  uint4 *d = static_cast<uint4 *>(dst);
  const uint4 *s = static_cast<const uint4 *>(src);
  const size_t units = n / 16;
  for (size_t i = lane; i < units; i += 32 * kCopyLoads) {
    uint4 v[kCopyLoads];
#pragma unroll
    for (int u = 0; u < kCopyLoads; ++u)
      if (i + 32 * u < units) v[u] = s[i + 32 * u];
#pragma unroll
    for (int u = 0; u < kCopyLoads; ++u)
      if (i + 32 * u < units) d[i + 32 * u] = v[u];
  }
}

/// `words` 4-byte words.
__device__ __forceinline__ void warp_copy4(void *dst, const void *src, size_t words, int lane) {
  uint32_t *d = static_cast<uint32_t *>(dst);
  const uint32_t *s = static_cast<const uint32_t *>(src);
  for (size_t i = lane; i < words; i += 32) d[i] = s[i];
}

/// Called by every thread of every block of a send kernel after its transfers. Each block's thread 0 makes the
/// block's stores visible system-wide (fence after the block barrier) and counts the block in; the last block runs
/// `puts()` (its thread 0: one put per PE of another node of the rows every block staged), completes everything
/// this PE posted (tshmem::quiet: the fence, and across nodes the proxy's completion of every request, any
/// block's) and sets `sig[my_pe] = 1` on every PE. The counter is reset for the next launch.
template <class Puts>
__device__ __forceinline__ void finish_and_signal(unsigned *counter, uint64_t *sig, int my_pe, int n_pes, Puts puts) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();
  const unsigned prev = atomicAdd(counter, 1u);
  if (prev != gridDim.x - 1) return;
  *counter = 0;
  __threadfence_system();
  puts();
  tshmem::quiet();
  for (int q = 0; q < n_pes; ++q) tshmem::signal_op(sig + my_pe, 1, TSHMEM_SIGNAL_SET, q);
}

}  // namespace tshmem_ep
