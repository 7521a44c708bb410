#include "coll/team.h"

#include "bootstrap/agree.h"
#include "context.h"

namespace tshmemi {

Status team_info(const Context &ctx, tshmem_team_t team, const char *call, TeamInfo *out) {
  const Bootstrap &boot = *ctx.boot;
  TeamInfo info;
  if (team == TSHMEM_TEAM_WORLD) {
    info.start = 0;
    info.stride = 1;
    info.size = boot.size();
    info.my_index = boot.rank();
    info.node_local = boot.local_size() == boot.size();
  } else if (team == TSHMEMX_TEAM_NODE) {
    const std::vector<int> &pes = boot.local_pes();
    info.start = pes.front();
    info.stride = pes.size() > 1 ? pes[1] - pes[0] : 1;
    info.size = static_cast<int>(pes.size());
    info.my_index = boot.local_rank();
    info.node_local = true;
    for (size_t k = 0; k < pes.size(); ++k)
      if (pes[k] != info.start + static_cast<int>(k) * info.stride)
        return set_error(TSHMEM_ERR_CONFIG,
                         "%s: TSHMEMX_TEAM_NODE: this node's PEs (%s) are not evenly strided; launch PEs in blocks or "
                         "round-robin per node",
                         call, pe_list(pes).c_str());
  } else {
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: unknown team %d (TSHMEM_TEAM_WORLD = 0, TSHMEMX_TEAM_NODE = 2)", call,
                     static_cast<int>(team));
  }
  *out = info;
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
