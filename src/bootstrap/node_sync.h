// The bootstrap's barrier and small allreduces through shared memory, for a job whose PEs all live on one
// node and share host memory (the shm heap: each PE's heap file carries one page for this, past the heap).
//
// Each PE publishes its contribution to a call in its own page (two slots, alternating by call, so a slot is
// rewritten only once every PE has read it: reaching call c + 2 needs every PE to have arrived at c + 1, which
// each does after reading call c), then reads every PE's slot and combines the same values in the same order:
// every PE gets the same result, as from MPI_Allreduce, for a few cache-line transfers instead of MPI messages.
// The slot's call number is stored last with release and read with acquire, so whatever a PE wrote before
// arriving (its puts into peer heaps) is visible to every PE that leaves the call: a barrier.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

// Polls before a waiting PE starts yielding its CPU (about 2.5 us here): a rendezvous of PEs that all run completes
// well within them, while a PE that waits for one descheduled on its own CPU (more runnable work than CPUs, for a
// moment or for good) hands it the CPU after little waste. Plain loads, no pause instruction between them: in the
// 2-core VM measured here a pause took about 70 ns, and a bare two-process flag barrier took 0.4-0.6 us with a pause
// per poll, 0.07 us without.
inline constexpr unsigned kNodePollsBeforeYield = 2048;

/// Bytes of shared memory each PE contributes (one page, zero when created).
constexpr uint64_t kNodeSyncBytes = 4096;

class NodeSync {
 public:
  /// Allreduces of more words go through MPI (the configuration check at init: never a collective made often).
  static constexpr int kMaxWords = 6;
  /// Every PE reads every PE's slot, so a call costs each PE n cache-line reads: beyond this many PEs on the node
  /// MPI's collectives, with their logarithmic rounds, are left in place (measured here only up to 4 PEs).
  static constexpr int kMaxPes = 64;

  /// `pages[i]`: where this PE sees the page of the node's i-th PE, `me` being this PE's index; the pages are
  /// zero. Every PE of the job must be among them (a job on one node).
  /// Every wait for a peer's slot is bounded by `*bounds` (a PE stopped or gone: TSHMEM_ERR_TIMEOUT), read at each
  /// wait (the bootstrap's, which outlive the sync; null: the defaults). A group of PEs that meets in pages holding
  /// older calls (a team's slots) starts at `first_call`, the same on every PE and above every call number there.
  NodeSync(std::vector<void *> pages, int me, const WaitBounds *bounds = nullptr, uint64_t first_call = 0);

  /// Collective over the node's PEs: `out[i]` = op over every PE's `in[i]`, the same on every PE; count may be 0
  /// (a barrier). Every PE must pass the same count and op; if not, every PE fails with the same message.
  Status allreduce(const int64_t *in, int64_t *out, int count, ReduceOp op);

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> call;  ///< the call this slot holds; stored last
    int32_t count;
    int32_t op;
    int64_t words[kMaxWords];
  };
  static_assert(sizeof(Slot) == 64, "one slot is one cache line");
  static_assert(2 * sizeof(Slot) <= kNodeSyncBytes, "two slots fit in a page");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "the call word is shared between processes");

  Slot &slot(size_t pe, uint64_t call) const { return reinterpret_cast<Slot *>(pages_[pe])[call & 1]; }
  Status wait_for(const Slot &slot, uint64_t call, size_t pe) const;

  std::vector<void *> pages_;
  size_t me_;
  const WaitBounds *bounds_;
  uint64_t calls_ = 0;
  bool oversubscribed_;  ///< more PEs on the node than CPUs: a waiting PE yields at once
};

}  // namespace tshmemi
