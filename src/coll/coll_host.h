// The host-blocking collectives (tshmemi_host_reduce/fcollect/alltoall/broadcast, tshmem_barrier on a team): the
// on-stream collective's own checks, one checked rendezvous, then the on-stream kernel, waited for.
#pragma once

#include <cstddef>

#include "bootstrap/collective_check.h"
#include "coll/coll_on_stream.h"
#include "coll/rendezvous.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// The host-blocking calls.
enum class HostKind { kReduce, kFcollect, kAlltoall, kBroadcast, kTeamBarrier };

/// One host-blocking call: kind, arguments, and the caller's name for messages.
struct HostCollective {
  HostKind kind = HostKind::kTeamBarrier;
  const char *call = "";
  tshmem_team_t team = TSHMEM_TEAM_WORLD;
  void *dst = nullptr;
  const void *src = nullptr;
  size_t count = 0;  ///< elements (reduce) or bytes (moves)
  tshmemx_dtype_t dtype = TSHMEMX_DTYPE_FLOAT;
  tshmemx_redop_t op = TSHMEMX_OP_SUM;
  int root = 0;
};

/// Collective over every PE (the team must hold every PE of the job): the call's checks on this PE, one checked
/// rendezvous through `check` (PEs whose calls differ are named on every PE and nothing is launched anywhere), then
/// the on-stream kernel on tshmem's internal stream, waited for. A team barrier is `rendezvous`'s barrier alone.
Status host_collective(const CollRuntime &rt, CollectiveCheck &check, Rendezvous &rendezvous, const HostCollective &c);

}  // namespace tshmemi
