// The host broadcast that does not wait for its members, in builds without the symmetry check
// (-DTSHMEM_SYMMETRY_CHECK=OFF), on a heap in host memory, on WORLD or NODE when every member is on this node, up to
// kMaxBytes. With the check, a broadcast's root must see every member's call before it returns (all return the
// same verdict); without it nothing needs the members' calls, so the root only publishes: it writes the data and its
// verdict into the next entry of a ring in its own heap and returns, and each member waits for that entry, copies
// it and counts the broadcast done. The root reuses an entry only once every member has counted the broadcast that
// last used it: it runs up to TSHMEMI_HOST_COLL_RING_ENTRIES broadcasts ahead of the slowest member.
//
// Verdicts: a root's refusal reaches every member (its message travels in the entry) and no PE writes dst; a
// member's own refusal is reported on that member only (it writes nothing; the others have gone ahead).
#pragma once

#include <cstddef>
#include <cstdint>

#include "bootstrap/collective_check.h"
#include "coll/coll_on_stream.h"
#include "tshmem/device/internal_regions.h"

namespace tshmemi {

struct HostMemCall;  // coll_host_mem.h

class BroadcastRing {
 public:
  /// Bytes one entry carries (its header is 64).
  static constexpr size_t kMaxBytes = TSHMEMI_HOST_COLL_RING_ENTRY_BYTES - 64;

  /// Whether a broadcast of `nbytes` on `team` goes through the ring: decided from arguments every member passes
  /// alike, so every member decides the same.
  static bool takes(tshmem_team_t team, const TeamInfo &info, size_t nbytes);

  /// The broadcast `c` (on a team that takes()) as `request` describes it, this PE's local verdict included.
  Status run(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, const HostMemCall &c,
             const CollectiveRequest &request);

 private:
  uint64_t calls_[2] = {};         ///< broadcasts on WORLD and on NODE: the next one's number, less one
  uint64_t members_done_[2] = {};  ///< the fewest broadcasts any other member was last seen to have done
};

}  // namespace tshmemi
