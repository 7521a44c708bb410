// The host's part of the collectives on a team that spans nodes (device side: impl/coll_spanning.cuh; design.md,
// "Beyond one node"): which teams may, and the refusal when the off-node proxy is missing.
#pragma once

#include "common/error.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

struct CollRuntime;  // coll/coll_on_stream.h

/// For a team that is not node-local: TSHMEM_SUCCESS when the collectives reach its members (the world team, with
/// the off-node proxy running); else an error naming `call`, the team and the reason.
Status check_spanning_team(const CollRuntime &rt, const char *call, tshmem_team_t team);

}  // namespace tshmemi
