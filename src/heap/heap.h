// The symmetric heap: collective allocation over a backend's memory, every call checked for symmetry.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "heap/allocator.h"
#include "heap/symmetry_check.h"
#include "mem/backend.h"

namespace tshmemi {

class Proxy;  // transport/proxy.h

class SymmetricHeap {
 public:
  /// The heap spans [base, base + size); the first `reserved` bytes are tshmem's own (device sync), and so is
  /// everything from `reserved_end` on (the spanning collectives' area in a job over several nodes; `size`
  /// when there is none; check_user_range refuses it like the start).
  SymmetricHeap(Bootstrap &boot, MemBackend &backend, uint64_t size, uint64_t reserved, uint64_t reserved_end);

  /// Collective malloc/calloc/align. Returns success and the block (NULL for size 0), or on every PE the
  /// same failure (asymmetric, exhausted, bad argument) with nothing allocated anywhere.
  Status allocate(CollectiveKind kind, uint64_t size, uint64_t alignment, void **out);
  /// Collective free (NULL allowed). A pointer that is no live block fails on every PE; nothing is freed.
  Status release(void *ptr);
  /// Collective rendezvous with no allocation (barrier_all, finalize): checked like the others.
  Status rendezvous(CollectiveKind kind);
  /// The same for a request that carries arguments (tshmem_barrier(team)); its local status joins the quiet's.
  Status rendezvous(CollectiveRequest request);
  /// Collective: the symmetry check alone for a call that is not the heap's (tshmem_team_split_strided), under
  /// the same lock and call sequence, so PEs that disagree are named.
  Status agree(const CollectiveRequest &request);
  /// agree(), then (only when it succeeded) an element-wise minimum of `in` over every PE into `out`, under the
  /// same lock, so no other collective of this PE's threads comes between them.
  Status agree_then_min(const CollectiveRequest &request, const int64_t *in, int64_t *out, int count);

  /// From now on a rendezvous (barrier_all, finalize) and a free complete this PE's puts to other nodes
  /// first, and a rendezvous makes theirs visible here after.
  void attach_proxy(Proxy *proxy) { proxy_ = proxy; }

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
  const SymmetryCheck &check() const { return check_; }

  static constexpr uint64_t kMinAlignment = 256;  // cudaMalloc's guarantee; vector loads of any width

 private:
  /// Completes this PE's transfers: the backend's, and its puts to other nodes.
  Status quiet_all();

  /// One collective at a time per PE (TSHMEM_THREAD_MULTIPLE): the allocator's maps, the call counter and the
  /// rendezvous they share. Collectives are ordered per PE anyway; threads calling two at once run in lock order.
  std::mutex collective_mutex_;
  Bootstrap &boot_;
  MemBackend &backend_;
  uintptr_t base_;
  uint64_t size_;
  uint64_t reserved_;
  uint64_t reserved_end_;
  HeapAllocator allocator_;
  SymmetryCheck check_;
  Proxy *proxy_ = nullptr;  ///< the off-node proxy, owned by the context; outlives the heap's use of it
  mutable std::mutex registered_mutex_;
  std::vector<Registered> registered_;
};

}  // namespace tshmemi
