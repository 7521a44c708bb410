// The host-blocking collectives (tshmemi_host_reduce/reduce_scatter/fcollect/alltoall/broadcast, tshmem_barrier on a
// team): the collective's checks, one checked rendezvous, then the on-stream kernel, waited for (a GPU heap), or the
// host's own copy and reduction (a heap in host memory: coll_host_mem.h).
#pragma once

#include <cstddef>

#include "bootstrap/collective_check.h"
#include "coll/coll_host_mem.h"
#include "coll/coll_on_stream.h"
#include "coll/rendezvous.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// The host-blocking calls.
enum class HostKind { kReduce, kReduceScatter, kFcollect, kAlltoall, kBroadcast, kTeamBarrier };

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

/// Collective over the team's members: the call's checks on this PE, one checked rendezvous through `check` (PEs
/// whose calls differ are named on every PE and nothing moves anywhere), then the work. On a GPU heap the team must
/// hold every PE of the job (the rendezvous is job-wide) and the work is the on-stream kernel on tshmem's internal
/// stream, waited for; in host memory any node-local team (and the world team across nodes) runs on the host,
/// through `host`. A team barrier is the rendezvous alone.
Status host_collective(const CollRuntime &rt, CollectiveCheck &check, Rendezvous &rendezvous, HostCollectives &host,
                       const HostCollective &c);

/// "tshmem_float_sum_reduce": the host reduction's name in messages, from its dtype and operator.
const char *reduce_call_name(tshmemx_dtype_t dtype, tshmemx_redop_t op);
/// "tshmemx_float_sum_reduce_scatter", the same for the reduce-scatter.
const char *reduce_scatter_call_name(tshmemx_dtype_t dtype, tshmemx_redop_t op);

}  // namespace tshmemi
