// Which parts of a heap are backed by memory, and what to back next: the bookkeeping of a heap whose memory is
// created as allocations reach it (the vmm backend), kept apart from the driver calls so it is tested without a GPU.
//
// The heap's VA is reserved whole at init; memory is created and mapped in chunks, each a multiple of the
// allocation granularity, at the same offsets on every PE (every PE holds the same plan, because every PE backs the
// same ranges in the same collective order). A chunk that continues the backed prefix grows geometrically: it
// extends the prefix to twice its size (never past the next backed chunk or the heap's end), so a heap filled by
// many small allocations is backed in O(log(heap / first chunk)) collective steps, each costing one handle
// exchange, and holds at most twice the memory its allocations reach. Where that much cannot be created, the
// caller asks again for exactly what the allocation needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace tshmemi {

class BackingPlan {
 public:
  struct Range {
    uint64_t offset = 0, bytes = 0;
    uint64_t end() const { return offset + bytes; }
  };

  /// A heap of `heap_bytes` (a multiple of `granularity`, which is nonzero), nothing backed.
  BackingPlan(uint64_t heap_bytes, uint64_t granularity);

  /// The ranges to back, in order, so that [begin, end) is backed (clipped to the heap): the unbacked gaps of the
  /// granularity-aligned cover; with `geometric`, a gap that starts at the backed prefix's end is extended to twice
  /// the prefix (bounded by the next backed chunk and the heap's end). Empty when all of it is backed.
  std::vector<Range> plan(uint64_t begin, uint64_t end, bool geometric) const;
  /// Records `range` as backed (a range plan() returned, created on every PE).
  void add(const Range &range);

  /// True when [offset, +bytes) is backed. Any thread; lock-free inside the backed prefix.
  bool backed(uint64_t offset, uint64_t bytes) const;
  /// Bytes backed now.
  uint64_t backed_bytes() const { return backed_bytes_.load(std::memory_order_acquire); }
  /// End of the backed part that starts at offset 0.
  uint64_t prefix() const { return prefix_.load(std::memory_order_acquire); }
  uint64_t heap_bytes() const { return heap_bytes_; }
  uint64_t granularity() const { return granularity_; }

 private:
  uint64_t heap_bytes_, granularity_;
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> chunks_;  ///< offset -> bytes, disjoint (adjacent ones stay apart: one per handle)
  std::atomic<uint64_t> prefix_{0}, backed_bytes_{0};
};

}  // namespace tshmemi
