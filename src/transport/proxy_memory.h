// How the off-node proxy touches this PE's memory: host memory for the shm heap (proxy_memory_host.cc), the
// GPU for vmm and ipc (proxy_memory_gpu.cu: copies on two streams of the proxy's own, atomics by a small
// kernel so they are atomic with respect to the GPU's own).
//
// Copies are asynchronous, in two lanes: the origin lane (reading what this PE sends, writing what its gets
// and fetches bring back) and the target lane (applying what other PEs send to this heap, and reading the
// heap for their gets, in the order applied). Work on one lane completes in the order it was issued;
// mark() returns a point on a lane and passed() tells whether everything issued before it has completed.
// The proxy thread never waits on a copy while it could drive MPI: that is what lets the copy of one chunk
// overlap the transfer of the previous one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/error.h"
#include "transport/amo_kind.h"
#include "tshmem/device/proxy_types.h"

namespace tshmemi {

enum ProxyLane : int { kOriginLane = 0, kTargetLane = 1 };

class ProxyMemory {
 public:
  virtual ~ProxyMemory() = default;
  /// Called once on the proxy thread before anything else (a GPU: makes its device current there).
  virtual Status bind_thread() = 0;
  /// Staging memory the proxy's messages live in (pinned on a GPU, so copies to and from it are DMA).
  virtual Status alloc_staging(size_t bytes, void **out) = 0;
  virtual void free_staging(void *staging) = 0;
  /// The device channel's device-memory side (proxy_types.h): zeroed but for `capacity`, `failure` (the channel's
  /// failure text as the device addresses it), `my_pe` and the channel's put staging (as the device addresses it,
  /// its size and largest payload); freed with this object. nullptr where there is no device
  /// (no kernel posts there).
  virtual Status alloc_device_side(tshmemi_proxy_channel *channel, int my_pe, tshmemi_proxy_device_side **out) = 0;
  /// Copies `bytes` between any two addresses of this process (heap, device or host memory). Between two
  /// host addresses the CPU copies at once (*queued = false: no GPU engine involved, none to wait for);
  /// otherwise the copy goes on `lane` (*queued = true) and is complete once a later mark() there has passed,
  /// the source staying untouched until then.
  virtual Status copy(ProxyLane lane, void *dst, const void *src, size_t bytes, bool *queued) = 0;
  /// Copies staging into the heap on the target lane, in order with the other apply_* calls (puts without
  /// an atomic between them may land in any order among themselves only where they do not overlap).
  virtual Status apply_put(void *heap_dst, const void *staging, size_t bytes) = 0;
  /// An aligned store of `width` (4 or 8) bytes from staging into the heap, on the target lane after every
  /// earlier apply (a signal SET: on a GPU a copy-engine write, which the GPU sees whole, so it needs no
  /// kernel and no compute time slice).
  virtual Status apply_store(void *word, const void *staging, unsigned width) = 0;
  /// Atomic `amo` (tshmemi_proxy_amo, amo_kind.h) of `width` bytes at `word` in the heap, on the target lane after
  /// every earlier apply; complete at a later mark(). With `old` (staging memory), the old value is written there: on
  /// return with `wait`, else once that mark has passed (the thread never waits for a GPU time slice).
  virtual Status apply_amo(void *word, unsigned amo, unsigned width, uint64_t value, uint64_t compare, uint64_t *old,
                           bool wait) = 0;
  /// A point on `lane`: everything issued there before it is complete (and in the heap, visible to this
  /// PE's loads and to later reads) once passed() says so.
  virtual Status mark(ProxyLane lane, uint64_t *point) = 0;
  virtual Status passed(ProxyLane lane, uint64_t point, bool *done) = 0;
};

Status make_host_proxy_memory(std::unique_ptr<ProxyMemory> *out);
#if TSHMEM_HAVE_CUDA
Status make_gpu_proxy_memory(int cuda_device, std::unique_ptr<ProxyMemory> *out);
#endif

}  // namespace tshmemi
