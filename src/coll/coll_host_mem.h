// The host-blocking collectives on a heap in host memory (the shm backend), run by the host: after the checked
// rendezvous every member reads what it needs straight from the other members' heaps (mapped on one node) and
// writes only its own dst; a closing rendezvous keeps every source in place until all members have read it. A
// world team that spans nodes moves its data through the bootstrap instead. Results are the GPU kernels', bit for
// bit (host_reduce.h).
//
// A team without every PE agrees and meets among its members only, through slots in their heaps (NodeSync's
// protocol; internal_regions.h, TSHMEMI_HOST_COLL_SYNC_OFFSET): its calls are checked against each other as the
// job's are, in a sequence of the team's own.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "bootstrap/collective_check.h"
#include "coll/broadcast_ring.h"
#include "coll/coll_on_stream.h"
#include "coll/team.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {

class NodeSync;

/// What a host-memory collective does (the arguments were checked on every member).
struct HostMemCall {
  CollKind kind = CollKind::kBarrier;  ///< kAllreduce, kReduceScatter, kFcollect, kAlltoall, kBroadcast
  void *dst = nullptr;
  const void *src = nullptr;
  size_t count = 0;  ///< elements (reducing kinds) or bytes (moves)
  tshmemx_dtype_t dtype = TSHMEMX_DTYPE_FLOAT;
  tshmemx_redop_t op = TSHMEMX_OP_SUM;
  int root = 0;
};

class HostCollectives {
 public:
  HostCollectives();
  ~HostCollectives();

  /// A split team took `team`: its rendezvous starts over from `first_call`, a number the members agree on that is
  /// larger than any call number an earlier team of this handle left in the slots.
  void on_split(tshmem_team_t team, uint64_t first_call);

  /// The members of `team` (not the whole job, node-local) as a group for CollectiveCheck::agree_in; the object
  /// lives as long as this one.
  CheckGroup &group(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info);

  /// Before the checked rendezvous of a valid call (`c` passed this PE's checks): a small call on WORLD or NODE
  /// copies its source into this PE's staging for the call's parity, so that run() reads the copies and needs no
  /// closing rendezvous. The same decision on every member (it depends on the arguments only).
  void stage(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, const HostMemCall &c);

  /// Runs `c` on `team` after its checked rendezvous (passed on every member), then, unless staged, the closing
  /// rendezvous: `group` for a team without every PE, else the bootstrap's barrier.
  Status run(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, CheckGroup *group, const HostMemCall &c);

  /// The broadcasts that do not wait for their members (builds without the symmetry check: broadcast_ring.h).
  BroadcastRing &ring() { return ring_; }

 private:
  class TeamGroup;
  std::mutex mutex_;
  std::unique_ptr<TeamGroup> groups_[TSHMEMI_TEAM_SLOTS];
  uint64_t first_call_[TSHMEMI_TEAM_SLOTS] = {};
  uint64_t staged_calls_[2] = {};  ///< WORLD's and NODE's staged calls that completed: the next one's parity
  bool staged_ = false;            ///< the call between stage() and run() was staged
  BroadcastRing ring_;
};

}  // namespace tshmemi
