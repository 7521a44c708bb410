// The symmetric heap: collective allocation over a backend's memory, every call checked for symmetry
// (bootstrap/collective_check.h) under the heap's own description of it.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "bootstrap/collective_check.h"
#include "heap/allocator.h"
#include "mem/backend.h"

namespace tshmemi {

/// The heap's collective allocations.
enum class HeapCall { kMalloc, kCalloc, kAlign };

class SymmetricHeap {
 public:
  /// The heap spans [base, base + size); the first `reserved` bytes are tshmem's own (device sync), and so is
  /// everything from `reserved_end` on (the spanning collectives' area in a job over several nodes; `size`
  /// when there is none; check_user_range refuses it like the start). Its calls agree through `check`, which
  /// outlives the heap.
  SymmetricHeap(CollectiveCheck &check, MemBackend &backend, uint64_t size, uint64_t reserved, uint64_t reserved_end);

  /// Collective malloc/calloc/align. Returns success and the block (NULL for size 0), or on every PE the
  /// same failure (asymmetric, exhausted, bad argument) with nothing allocated anywhere.
  Status allocate(HeapCall call, uint64_t size, uint64_t alignment, void **out);
  /// Collective free (NULL allowed). A pointer that is no live block fails on every PE; nothing is freed.
  Status release(void *ptr);

  /// From now on a free completes this PE's transfers to other nodes with `quiet` (after the backend's own),
  /// before any PE's block can be reused. Set once at init, before any other thread calls.
  void set_offnode_quiet(std::function<Status()> quiet) { offnode_quiet_ = std::move(quiet); }

  bool contains(const void *ptr, uint64_t bytes) const;
  /// contains(), or [ptr, +bytes) inside one registered buffer (tshmemx_buffer_register_symmetric).
  bool contains_symmetric(const void *ptr, uint64_t bytes) const;

  /// Registered buffers, by offset from the heap base (the backend's registration range): recorded once every
  /// PE mapped one, forgotten when unregistered. `user` is the application's own address of the buffer.
  struct Registered {
    uint64_t offset, bytes;
    const void *user;
  };
  void add_registered(const Registered &r);
  void remove_registered(uint64_t offset);
  std::vector<Registered> registered() const;
  /// Checks that [ptr, +bytes) lies where user blocks live: inside the heap and past tshmem's reserved
  /// region (its first `reserved` bytes, device barrier counters). Else TSHMEM_ERR_INVALID_ARG naming
  /// `call`, `what` and the range.
  Status check_user_range(const char *call, const char *what, const void *ptr, uint64_t bytes) const;
  uint64_t offset_of(const void *ptr) const { return reinterpret_cast<uintptr_t>(ptr) - base_; }
  uint64_t size() const { return size_; }
  const HeapAllocator &allocator() const { return allocator_; }

  static constexpr uint64_t kMinAlignment = 256;  // cudaMalloc's guarantee; vector loads of any width

 private:
  /// Collective, after every PE agreed on the block at `offset`: backs the heap through its end (and zeroes it for
  /// calloc before any PE returns). On failure every PE returns the same message, naming the call, its size and the
  /// rule; the caller rolls the block back.
  Status back_block(HeapCall call, uint64_t offset, uint64_t size, uint64_t alignment);
  /// Completes this PE's transfers: the backend's, and its puts to other nodes.
  Status quiet_all();

  /// One allocation or free at a time per PE (TSHMEM_THREAD_MULTIPLE): the allocator's maps, from the tentative
  /// allocation through the agreement that keeps or rolls it back. Taken before the check's own lock.
  std::mutex collective_mutex_;
  CollectiveCheck &check_;
  MemBackend &backend_;
  uintptr_t base_;
  uint64_t size_;
  uint64_t reserved_;
  uint64_t reserved_end_;
  HeapAllocator allocator_;
  std::function<Status()> offnode_quiet_;  ///< empty: no PE of another node is reached
  mutable std::mutex registered_mutex_;
  std::vector<Registered> registered_;
};

}  // namespace tshmemi
