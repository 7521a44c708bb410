#include "coll/coll_spanning.h"

#include "coll/coll_on_stream.h"

namespace tshmemi {

Status check_spanning_team(const CollRuntime &rt, const char *call, tshmem_team_t team) {
  // The spanning path keeps its barrier words and staging per block row for one team: the world's
  // (internal_regions.h). The node team is node-local by definition, split teams are refused before.
  if (team != TSHMEM_TEAM_WORLD)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: team %d spans more than this node; across nodes the collectives take TSHMEM_TEAM_WORLD only",
                     call, static_cast<int>(team));
  if (!rt.offnode_reachable)
    return set_error(TSHMEM_ERR_UNREACHABLE_PE,
                     "%s: team %d spans nodes and the PEs of other nodes are unreachable from PE %d: %s", call,
                     static_cast<int>(team), rt.my_pe,
                     rt.offnode_reason.empty() ? "no off-node transport" : rt.offnode_reason.c_str());
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
