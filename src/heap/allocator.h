// The symmetric heap's allocator: first fit by address over a free list with coalescing.
//
// Deterministic by construction: the same sequence of requests gives the same offsets on every PE,
// which is what lets the symmetry check compare offsets. Freeing a block and then its neighbours
// restores the exact free list that existed before, so a rolled-back tentative allocation leaves
// no trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace tshmemi {

class HeapAllocator {
 public:
  /// Manages offsets [begin, end). `min_alignment` must be a power of two; every block's start and
  /// length are multiples of it.
  HeapAllocator(uint64_t begin, uint64_t end, uint64_t min_alignment);

  /// First fit. Returns the block's offset, or nothing when no free range can hold it.
  /// `alignment` must be a power of two (checked by the caller); it is raised to the minimum.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t alignment);

  /// Frees the live block starting at `offset`. Returns false (and changes nothing) if no live block
  /// starts there.
  bool release(uint64_t offset);

  /// Size (rounded) of the live block at `offset`, or nothing.
  std::optional<uint64_t> block_size(uint64_t offset) const;

  uint64_t bytes_free() const { return bytes_free_; }
  uint64_t largest_free() const;
  size_t live_blocks() const { return live_.size(); }
  size_t free_ranges() const { return free_.size(); }
  uint64_t min_alignment() const { return min_alignment_; }

  /// Checks the internal invariants (free ranges sorted, disjoint, coalesced, accounting exact).
  bool consistent() const;

 private:
  void insert_free(uint64_t offset, uint64_t size);  // coalesces with neighbours

  uint64_t begin_, end_, min_alignment_;
  uint64_t bytes_free_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, disjoint and never adjacent
  std::map<uint64_t, uint64_t> live_;  // offset -> size
};

}  // namespace tshmemi
