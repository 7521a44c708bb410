// How the off-node proxy touches this PE's memory: host memory for the shm heap (proxy_memory_host.cc), the
// GPU for vmm and ipc (proxy_memory_gpu.cu: copies on the proxy's own stream, atomics by a small kernel so
// they are atomic with respect to the GPU's own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/error.h"

namespace tshmemi {

class ProxyMemory {
 public:
  virtual ~ProxyMemory() = default;
  /// Called once on the proxy thread before anything else (a GPU: makes its device current there).
  virtual Status bind_thread() = 0;
  /// Staging memory the proxy's messages live in (pinned on a GPU, so copies to and from it are DMA).
  virtual Status alloc_staging(size_t bytes, void **out) = 0;
  virtual void free_staging(void *staging) = 0;
  /// A zeroed 64-bit counter kernels increment (device memory on a GPU); nullptr where there is no device.
  virtual Status alloc_device_counter(uint64_t **out) = 0;
  /// Copies from any address of this process (heap, device or host memory) into staging; complete on return.
  virtual Status read(void *staging, const void *src, size_t bytes) = 0;
  /// Copies staging to any address of this process; complete on return.
  virtual Status write(void *dst, const void *staging, size_t bytes) = 0;
  /// Copies staging into the heap, in order with the other apply_* calls; may complete later (settle()).
  virtual Status apply_put(void *heap_dst, const void *staging, size_t bytes) = 0;
  /// Atomic `amo` (tshmemi_proxy_amo) of `width` bytes at `word` in the heap, after every earlier apply_*;
  /// returns the old value.
  virtual Status apply_amo(void *word, unsigned amo, unsigned width, uint64_t value, uint64_t compare,
                           uint64_t *old) = 0;
  /// Everything applied so far is in the heap, visible to this PE's loads and to later reads.
  virtual Status settle() = 0;
};

Status make_host_proxy_memory(std::unique_ptr<ProxyMemory> *out);
#if TSHMEM_HAVE_CUDA
Status make_gpu_proxy_memory(int cuda_device, std::unique_ptr<ProxyMemory> *out);
#endif

/// The one definition of each atomic kind's new value: for the host and the GPU kernel alike.
template <class T>
#ifdef __CUDACC__
__host__ __device__
#endif
    inline T
    amo_result(unsigned amo, T old, T value, T compare) {
  switch (amo & 15u) {
    case 1: return value;  // SET
    case 2: return static_cast<T>(old + value);
    case 3: return static_cast<T>(old + 1);
    case 4: return static_cast<T>(old & value);
    case 5: return static_cast<T>(old | value);
    case 6: return static_cast<T>(old ^ value);
    case 7: return value;                         // SWAP
    case 8: return old == compare ? value : old;  // CSWAP
  }
  return old;  // FETCH
}

/// Whether `amo` names an atomic kind (validation before anything is applied).
inline bool amo_known(unsigned amo) { return (amo >= 1 && amo <= 6) || (amo >= 16 && amo <= 24); }

}  // namespace tshmemi
