// The one barrier every device barrier is (sync_all/sync_pes, the collectives' row and thread barriers, the
// spanning collectives' rows): an all-to-all exchange of an epoch, one release store and one acquire spin per
// peer and nothing else.
//
// The group barrier first (every thread of the group has arrived); each announcing thread writes the new epoch
// into its slot at a share of the peers with st.release.sys and spins (ld.acquire.sys) until those peers' slots
// here reach the epoch; group barrier; the leader records the epoch. No RMW and no separate fence: the release
// store is the fence. It is cumulative: the other threads' earlier writes (local or to peers) precede it through
// the group barrier (base causality order is transitive), so a peer whose acquire sees the epoch sees them too;
// the trailing group barrier hands what the spinning threads acquired to the whole group. The own slot is never
// written or read (the own arrival is implied). Epochs only grow, so a slot a peer already moved past still
// satisfies >=, and the epoch word is read again only after the next barrier's leading group barrier.
#ifndef TSHMEM_DEVICE_IMPL_EPOCH_BARRIER_CUH
#define TSHMEM_DEVICE_IMPL_EPOCH_BARRIER_CUH

#include "tshmem/device/impl/group.cuh"
#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/transfer.cuh"
#include "tshmem/device/remote_ptr.cuh"
#include "tshmem/device/wait.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// Which PEs a barrier's members may be: all on this node (an arrival is a store through the peer table; an
/// unreachable PE traps), or anywhere (a PE of another node gets its arrival through transfer::arrive, after
/// every request this PE posted before it). The on-node collectives keep the first: not even the untaken
/// off-node call is in their kernels.
enum class barrier_reach { node, any };

/// A barrier's words on this PE: the epoch its leader counts (read and written by the leader only), and
/// flags[k] (symmetric), the last epoch member k announced here.
struct barrier_words {
  volatile uint64_t *epoch;
  uint64_t *flags;
};

/// The barrier among `size` members, this PE being member `my_index` and member k being PE `pe_of(k)`, on the
/// words `words_of()` returns (called after the group barrier: the epoch must be read after it, and the caller's
/// address arithmetic stays where the barrier's own was). Every thread of the Scope group calls.
template <class Scope, barrier_reach Reach, class WordsOf, class PeOf>
TSHMEMI_DEVICE void epoch_barrier(WordsOf words_of, int my_index, int size, PeOf pe_of, const char *call,
                                  const tshmemi_device_state &st) {
  using G = group<Scope>;
  G::sync();
  const barrier_words words = words_of();
  const uint64_t epoch = *words.epoch + 1;
  const int rank = static_cast<int>(G::rank()), threads = static_cast<int>(G::size());
  // Member (my_index + 1 + i) % size for i = rank, rank + threads, ... < size - 1: each thread takes its own.
  if constexpr (Reach == barrier_reach::any) {
    const uint64_t flag_offset = heap_offset_of(words.flags + my_index, st);
    for (int i = rank; i < size - 1; i += threads) {
      const int pe = pe_of((my_index + 1 + i) % size);
      transfer::arrive(peer_slot_lane(pe, call, st), flag_offset, epoch, pe, call, st);
    }
  } else {
    for (int i = rank; i < size - 1; i += threads)
      store_release_sys(remote_ptr_lane(words.flags + my_index, pe_of((my_index + 1 + i) % size), call, st), epoch);
  }
  for (int i = rank; i < size - 1; i += threads)
    spin_until<uint64_t>(words.flags + (my_index + 1 + i) % size, TSHMEM_CMP_GE, epoch, call, st);
  G::sync();
  if (rank == 0) *words.epoch = epoch;
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_EPOCH_BARRIER_CUH
