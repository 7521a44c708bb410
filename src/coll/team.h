// The predefined teams on the host: TSHMEM_TEAM_WORLD and TSHMEMX_TEAM_NODE as (start, stride, size).
// The device side (tshmem/device/impl/team.cuh) derives the same view from the device state.
#pragma once

#include "common/error.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

struct Context;

/// Team member k is PE start + k * stride.
struct TeamInfo {
  int start = 0;
  int stride = 1;
  int size = 0;
  int my_index = -1;
  bool node_local = false;  ///< every member is load/store reachable from this PE
};

/// TSHMEM_ERR_INVALID_ARG naming `call` for an unknown team; TSHMEM_ERR_CONFIG when the node's PEs are not
/// evenly strided (the node team then has no (start, stride) form).
Status team_info(const Context &ctx, tshmem_team_t team, const char *call, TeamInfo *out);

}  // namespace tshmemi
