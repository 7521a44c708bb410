#include "mem/backing_plan.h"

#include <algorithm>

namespace tshmemi {

BackingPlan::BackingPlan(uint64_t heap_bytes, uint64_t granularity)
    : heap_bytes_(heap_bytes), granularity_(granularity) {}

std::vector<BackingPlan::Range> BackingPlan::plan(uint64_t begin, uint64_t end, bool geometric) const {
  std::vector<Range> out;
  end = std::min(end, heap_bytes_);
  if (begin >= end) return out;
  const uint64_t lo = begin / granularity_ * granularity_;
  const uint64_t hi = std::min(heap_bytes_, (end + granularity_ - 1) / granularity_ * granularity_);
  const std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t prefix = prefix_.load(std::memory_order_relaxed);
  uint64_t at = lo;
  auto next = chunks_.upper_bound(lo);
  if (next != chunks_.begin()) {  // a chunk that starts at or before lo may cover it
    const auto before = std::prev(next);
    at = std::max(at, before->first + before->second);
  }
  while (at < hi) {
    const uint64_t limit = next != chunks_.end() ? next->first : heap_bytes_;  // the next backed chunk
    if (at < limit) {
      uint64_t gap_end = std::min(hi, limit);
      if (geometric && at == prefix) gap_end = std::min(limit, std::max(gap_end, 2 * prefix));
      out.push_back({at, gap_end - at});
      at = gap_end;
    }
    if (next == chunks_.end()) break;
    at = std::max(at, next->first + next->second);
    ++next;
  }
  return out;
}

void BackingPlan::add(const Range &range) {
  const std::lock_guard<std::mutex> lock(mutex_);
  chunks_[range.offset] = range.bytes;
  backed_bytes_.fetch_add(range.bytes, std::memory_order_acq_rel);
  uint64_t prefix = prefix_.load(std::memory_order_relaxed);
  for (auto it = chunks_.find(prefix); it != chunks_.end() && it->first == prefix; it = chunks_.find(prefix))
    prefix += it->second;
  prefix_.store(prefix, std::memory_order_release);
}

bool BackingPlan::backed(uint64_t offset, uint64_t bytes) const {
  if (offset > heap_bytes_ || bytes > heap_bytes_ - offset) return false;
  if (bytes == 0) return true;
  const uint64_t end = offset + bytes;
  if (end <= prefix_.load(std::memory_order_acquire)) return true;
  const std::lock_guard<std::mutex> lock(mutex_);
  uint64_t at = offset;  // walk the chunks that cover [at, end) without a hole
  auto it = chunks_.upper_bound(at);
  if (it == chunks_.begin()) return false;
  --it;
  while (it != chunks_.end() && it->first <= at) {
    at = std::max(at, it->first + it->second);
    if (at >= end) return true;
    ++it;
  }
  return false;
}

}  // namespace tshmemi
