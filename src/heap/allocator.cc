#include "heap/allocator.h"

#include <iterator>

namespace tshmemi {
namespace {

uint64_t round_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) & ~(alignment - 1); }

}  // namespace

HeapAllocator::HeapAllocator(uint64_t begin, uint64_t end, uint64_t min_alignment)
    : begin_(round_up(begin, min_alignment)),
      end_(end & ~(min_alignment - 1)),
      min_alignment_(min_alignment),
      bytes_free_(0) {
  if (end_ > begin_) {
    free_.emplace(begin_, end_ - begin_);
    bytes_free_ = end_ - begin_;
  }
}

std::optional<uint64_t> HeapAllocator::allocate(uint64_t size, uint64_t alignment) {
  if (size == 0) return std::nullopt;
  if (alignment < min_alignment_) alignment = min_alignment_;
  if (size > end_ - begin_) return std::nullopt;
  const uint64_t length = round_up(size, min_alignment_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t range_start = it->first, range_size = it->second;
    const uint64_t start = round_up(range_start, alignment);
    if (start < range_start || start - range_start > range_size) continue;  // overflow / no room for padding
    if (range_size - (start - range_start) < length) continue;
    // Split: [range_start, start) stays free, [start, start+length) is live, the rest stays free.
    free_.erase(it);
    if (start > range_start) free_.emplace(range_start, start - range_start);
    const uint64_t tail = range_start + range_size - (start + length);
    if (tail > 0) free_.emplace(start + length, tail);
    live_.emplace(start, length);
    bytes_free_ -= length;
    return start;
  }
  return std::nullopt;
}

bool HeapAllocator::release(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  const uint64_t length = it->second;
  live_.erase(it);
  insert_free(offset, length);
  bytes_free_ += length;
  return true;
}

void HeapAllocator::insert_free(uint64_t offset, uint64_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {  // merge with the range before
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && offset + size == next->first) {  // merge with the range after
    size += next->second;
    free_.erase(next);
  }
  free_.emplace(offset, size);
}

std::optional<uint64_t> HeapAllocator::block_size(uint64_t offset) const {
  auto it = live_.find(offset);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

uint64_t HeapAllocator::largest_free() const {
  uint64_t largest = 0;
  for (const auto &range : free_)
    if (range.second > largest) largest = range.second;
  return largest;
}

bool HeapAllocator::consistent() const {
  uint64_t free_total = 0, cursor = begin_;
  // Walk both maps in address order: every byte of [begin, end) is in exactly one range.
  auto f = free_.begin();
  auto l = live_.begin();
  bool last_was_free = false;
  while (f != free_.end() || l != live_.end()) {
    const bool take_free = l == live_.end() || (f != free_.end() && f->first < l->first);
    const uint64_t start = take_free ? f->first : l->first;
    const uint64_t size = take_free ? f->second : l->second;
    if (start != cursor || size == 0) return false;  // gap, overlap or empty range
    if (take_free && last_was_free) return false;    // two adjacent free ranges: not coalesced
    if (start % min_alignment_ != 0 || size % min_alignment_ != 0) return false;
    if (take_free) free_total += size;
    last_was_free = take_free;
    cursor = start + size;
    if (take_free)
      ++f;
    else
      ++l;
  }
  return (end_ <= begin_ || cursor == end_) && free_total == bytes_free_;
}

}  // namespace tshmemi
