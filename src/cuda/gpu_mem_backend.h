// What the two GPU backends (vmm, ipc) share: the peer-base bookkeeping and the host-issued transfers,
// which are plain CUDA runtime copies once every heap is mapped into this process's unified address space.
// The backends differ only in how they allocate, export, import and release the memory.
#pragma once

#include <vector>

#include "mem/backend.h"

namespace tshmemi {

class GpuMemBackend : public MemBackend {
 public:
  explicit GpuMemBackend(int cuda_device) : device_(cuda_device) {}

  bool device_memory() const override { return true; }
  void *local_base() const override { return own_base_; }
  void *peer_base(int pe) const override;

  /// cudaMemcpy with cudaMemcpyDefault (UVA): host, own heap and mapped peer heaps alike. A copy from
  /// pageable host memory may return before the DMA lands: quiet() completes it.
  Status copy(void *dst, const void *src, size_t bytes) override;
  /// cudaMemcpyAsync on `stream` (NULL: the legacy default stream).
  Status copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t stream) override;
  /// cudaMemset, then cudaDeviceSynchronize.
  Status zero(void *dst, size_t bytes) override;
  /// cudaDeviceSynchronize: completes every host-issued copy (blocking, on-stream) and every kernel this PE
  /// launched on its device, and with them their device-issued puts and atomics.
  Status quiet() override;

 protected:
  /// Collective and ordered, shared by both backends: synchronise the device, release every peer mapping,
  /// barrier (every PE has let go of every peer heap), then release the own heap. Nobody frees memory a
  /// peer may still be accessing.
  Status ordered_teardown(Bootstrap &boot, const char *backend);
  /// Unmaps / closes every peer heap (the backend's own handles).
  virtual void release_peers() = 0;
  /// Releases this PE's own heap.
  virtual void release_own() = 0;

  int device_;
  void *own_base_ = nullptr;        ///< set by the backend once its own heap is mapped
  std::vector<void *> peer_bases_;  ///< by PE: own base, mapped peers, nullptr for other nodes
};

}  // namespace tshmemi
