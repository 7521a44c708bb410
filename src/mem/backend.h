// The memory-backend interface: where the symmetric heap lives and how node-local peers map it.
// One file per backend: shm_backend.cc (POSIX shared memory, no GPU), vmm_backend.cc (CUDA VMM with
// POSIX fd handles), ipc_backend.cc (cudaMalloc + CUDA IPC handles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

class MemBackend {
 public:
  virtual ~MemBackend() = default;

  virtual const char *name() const = 0;
  /// True when the heap is device memory (loads/stores from the host are not allowed).
  virtual bool device_memory() const = 0;

  /// Collective over all PEs: reserves `heap_size` bytes for this PE and maps every node-local
  /// peer's heap. Fails on every PE when it fails on one (and unmaps whatever was mapped).
  virtual Status create(Bootstrap &boot, uint64_t heap_size) = 0;

  /// This PE's heap base.
  virtual void *local_base() const = 0;
  /// Where this PE sees `pe`'s heap: its own base for itself, nullptr for PEs of other nodes.
  virtual void *peer_base(int pe) const = 0;

  /// Blocking copy between any two addresses this PE can reach (own heap, mapped peer heap, host memory).
  virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
  /// Stream-ordered copy (GPU backends); the shm backend copies at once.
  virtual Status copy_on_stream(void *dst, const void *src, size_t bytes, tshmemx_stream_t stream) = 0;
  /// Zeroes `bytes` at `dst` in this PE's heap; complete when it returns.
  virtual Status zero(void *dst, size_t bytes) = 0;
  /// Completes every transfer this PE has issued (host copies, and the device for GPU backends).
  virtual Status quiet() = 0;

  /// Collective teardown: every PE unmaps its peers, barrier, then each releases its own memory.
  /// Every PE calls it once create was called on every PE, whatever create returned and whatever this PE
  /// holds (nothing, part, all): it must run the same collectives on every PE and may run twice.
  virtual Status destroy(Bootstrap &boot) = 0;
};

/// `init_timeout_ms` (TSHMEM_INIT_TIMEOUT_MS) bounds each wait for a node-local peer while descriptors cross.
Status make_shm_backend(int64_t init_timeout_ms, std::unique_ptr<MemBackend> *out);
#if TSHMEM_HAVE_CUDA
Status make_vmm_backend(int cuda_device, int64_t init_timeout_ms, std::unique_ptr<MemBackend> *out);
Status make_ipc_backend(int cuda_device, std::unique_ptr<MemBackend> *out);
#endif

}  // namespace tshmemi
