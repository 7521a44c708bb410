// Host-initiated access to PEs of other nodes (design.md, "Beyond one node"): the heap of every PE is
// exposed once, collectively, and tshmem_putmem / tshmem_getmem to a PE without a load/store path go
// through it. One implementation: MPI one-sided RMA (mpi_rma.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

class HostRma {
 public:
  virtual ~HostRma() = default;
  /// Writes `bytes` from `src` to offset `heap_offset` of `pe`'s heap; `src` may be reused on return.
  /// Remote completion: quiet().
  virtual Status put(uint64_t heap_offset, const void *src, size_t bytes, int pe) = 0;
  /// Reads `bytes` at offset `heap_offset` of `pe`'s heap into `dst`; complete on return.
  virtual Status get(void *dst, uint64_t heap_offset, size_t bytes, int pe) = 0;
  /// Completes every put this PE has issued, at its target.
  virtual Status quiet() = 0;
  /// After a barrier: makes what other PEs wrote into this PE's heap visible to its own loads.
  virtual Status sync() = 0;
  /// Collective over all PEs: withdraws the heap.
  virtual Status destroy() = 0;
};

/// Collective over all PEs of `boot`: exposes [heap_base, heap_base + heap_bytes) of every PE (host memory)
/// for one-sided access. Fails on every PE when it fails on one.
Status make_mpi_host_rma(Bootstrap &boot, void *heap_base, uint64_t heap_bytes, std::unique_ptr<HostRma> *out);

}  // namespace tshmemi
