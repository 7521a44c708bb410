// The one rule for tshmem's reserved heap regions (device/tshmem/device/internal_regions.h: the barrier and
// collective words at the start of the heap, the spanning collectives' area at its end). Host calls apply it to every
// access (heap.cc); the target of the off-node proxy applies it to every write another node sends (transport/wire.cc),
// whatever posted it: a host call or a kernel. Free of everything but the region layout, so both include it.
#pragma once

#include <cstdint>

#include "tshmem/device/internal_regions.h"

namespace tshmemi {

/// Which reserved region [offset, offset + bytes) overlaps in a heap whose user blocks lie in [reserved,
/// reserved_end) ("start", "end"); nullptr when it lies among the user blocks.
inline const char *reserved_region_touched(uint64_t offset, uint64_t bytes, uint64_t reserved, uint64_t reserved_end) {
  if (offset < reserved) return "start";
  if (offset + bytes > reserved_end || offset + bytes < offset) return "end";
  return nullptr;
}

/// The rule a write from another node into a heap of `heap_bytes` (a job that spans nodes: both regions are
/// reserved) breaks, or nullptr. A write into a reserved region is refused unless it has one of the two shapes
/// tshmem's own device code sends there: a barrier's arrival (`set_signal`: an 8-byte SET signal) on the barrier
/// words (the start region's sync and collective words, the spanning area's header), or a spanning collective's
/// put into the spanning area's staging rows.
inline const char *remote_write_rule(uint64_t offset, uint64_t bytes, bool set_signal, uint64_t heap_bytes) {
  const uint64_t span = TSHMEMI_COLL_SPAN_OFFSET(heap_bytes);
  const char *region = reserved_region_touched(offset, bytes, TSHMEM_INTERNAL_HEAP_BYTES, span);
  if (region == nullptr) return nullptr;
  const bool in_start_words = offset + bytes <= TSHMEMI_COLL_LL_OFFSET;
  const bool in_span_header = offset >= span && offset + bytes <= span + TSHMEMI_COLL_SPAN_HEADER_BYTES;
  const bool in_span_rows = offset >= span + TSHMEMI_COLL_SPAN_HEADER_BYTES && offset + bytes <= heap_bytes;
  if (set_signal && (in_start_words || in_span_header)) return nullptr;  // a barrier's arrival
  if (!set_signal && in_span_rows) return nullptr;                       // a spanning collective's staging
  return region[0] == 's' ? "write into tshmem's reserved region at the start of the heap (its barrier and collective "
                            "words; TSHMEM_INTERNAL_HEAP_BYTES): only tshmem's own arrivals may go there"
                          : "write into tshmem's reserved region at the end of the heap (the spanning collectives' "
                            "area): only tshmem's own arrivals and staging may go there";
}

}  // namespace tshmemi
