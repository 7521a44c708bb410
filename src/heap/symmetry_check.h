// The symmetry check: every collective heap call (and barrier, finalize) carries
// (sequence no., kind, size, alignment, offset, local status, the caller's note) through ONE allreduce of min
// and max.
// The collective needs that synchronisation anyway (OpenSHMEM allocation ends with a barrier), so the
// check adds no collective. On a mismatch every PE gets the same status and the same message naming
// each divergent PE and what it asked for; the caller then rolls back, so nothing is allocated.
//
// Configure with -DTSHMEM_SYMMETRY_CHECK=OFF to compile the comparison out: the allreduce then carries
// only the local status (PEs still agree on exhaustion and on argument errors).
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

enum class CollectiveKind : int64_t {
  kMalloc = 1,
  kCalloc = 2,
  kAlign = 3,
  kFree = 4,
  kBarrier = 5,
  kFinalize = 6,
  kMulticast =
      7,  ///< binding the heap to the node's multicast object (src/nvls): size = bytes bound, alignment = granularity
  kTeamSplit = 8,  ///< tshmem_team_split_strided: size = start | stride << 16 | size << 32, alignment = 1 << parent
  // Host-blocking collectives (src/coll/coll_host.cc): alignment = 1 << team, offset = dst's heap offset (-1: none).
  kReduce = 9,      ///< size = count | dtype << 40 | op << 44
  kFcollect = 10,   ///< size = bytes per PE
  kAlltoall = 11,   ///< size = bytes per PE pair
  kBroadcast = 12,  ///< size = bytes | root << 40
  kTeamBarrier = 13,
  kRegister = 14,    ///< tshmemx_buffer_register_symmetric: size = bytes, offset = offset in the registration range
  kUnregister = 15,  ///< tshmemx_buffer_unregister_symmetric: size = bytes of the range (-1: none), offset as above
};

const char *collective_call_name(CollectiveKind kind);  // "tshmem_malloc", ...

/// What this PE asked for in one collective call.
struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::kMalloc;
  int64_t size = 0;                      ///< bytes asked (free: size of the block being freed; -1 if not a block)
  int64_t alignment = 0;                 ///< requested alignment (0 where it does not apply)
  int64_t offset = -1;                   ///< heap offset this PE allocated / frees (-1: none)
  Status local_status = TSHMEM_SUCCESS;  ///< the PE's own verdict before agreeing (bad argument, exhausted)
  std::string local_error;               ///< its message when local_status != success
  /// The caller's own account of the call (tshmemx_note_next_collective), e.g. a binding's
  /// "tshmem.empty(shape=(4, 8), dtype=float32)": compared across PEs like the fields above, and named first in
  /// every message. Empty: none.
  std::string note;

  std::string describe() const;  ///< "tshmem_malloc(size=4096) -> offset 65536", after "<note>: " if any
};

/// Records the calling thread's note for its next call that reaches SymmetryCheck::agree (see
/// tshmemx_note_next_collective); an empty `error` is no error. Replaces a note not yet taken.
void note_next_collective(std::string description, std::string error);
/// Drops the calling thread's pending note, if any (a call that failed before its check).
void drop_collective_note();

class SymmetryCheck {
 public:
  explicit SymmetryCheck(Bootstrap &boot) : boot_(boot) {}

  /// Collective. Returns success when every PE made the same request, got the same offset and
  /// succeeded locally. Otherwise returns, on every PE, the same status and message:
  ///   TSHMEM_ERR_ASYMMETRIC when requests or offsets differ (the divergent PEs named, each request listed),
  ///   else the local status of the lowest failing PE (e.g. TSHMEM_ERR_OUT_OF_MEMORY), with each failing PE's
  ///   message.
  /// A note the calling thread left (note_next_collective) joins this request and is taken.
  Status agree(const CollectiveRequest &mine);

  uint64_t calls() const { return sequence_; }
  static constexpr bool enabled() { return TSHMEM_SYMMETRY_CHECK != 0; }

 private:
  Status agree_request(const CollectiveRequest &mine);
  Status explain_failure(const CollectiveRequest &mine);

  Bootstrap &boot_;
  uint64_t sequence_ = 0;  // collective calls made by this PE; part of every comparison
};

}  // namespace tshmemi
