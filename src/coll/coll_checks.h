// Every argument check of a collective, shared by the on-stream forms (coll_on_stream.cc: GPU kernels) and the
// host-blocking forms (coll_host.cc: kernels on a GPU heap, the host on the shm heap). Plain C++: the checks are
// the same with or without CUDA, so a call refused on the GPU is refused on shm with the same words.
#pragma once

#include <cstddef>

#include "coll/coll_launch.h"
#include "coll/coll_on_stream.h"
#include "coll/team.h"

namespace tshmemi {

/// Bytes of one element of `dtype`; 0 for an unknown code.
size_t dtype_size(tshmemx_dtype_t dtype);
/// "float", "bfloat16", ...; "?" for an unknown code.
const char *dtype_name(tshmemx_dtype_t dtype);
/// "sum", "min", ...; "?" for an unknown code.
const char *redop_name(tshmemx_redop_t op);

/// The team, looked up and checked for the collectives (known, within TSHMEMI_COLL_MAX_TEAM, reachable). With
/// `looked_up` the caller has already looked `team` up into `*info` (successfully), and only the checks run.
Status check_coll_team(const CollRuntime &rt, const char *call, tshmem_team_t team, TeamInfo *info,
                       bool looked_up = false);

/// All-reduce: dst and src hold `count` elements of `dtype` (equal, in place, or apart). `looked_up`: as for
/// check_coll_team (the host-blocking forms look the team up first; a lookup takes the team table's lock).
Status check_allreduce_args(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                            size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, TeamInfo *info,
                            bool looked_up = false);
/// Reduce-scatter: dst holds `count` elements, src the team's size times as many, apart.
Status check_reduce_scatter_args(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst,
                                 const void *src, size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op,
                                 TeamInfo *info, bool looked_up = false);
/// The byte moves (fcollect, alltoall, broadcast) and the barrier (no buffers).
Status check_move_args(const CollRuntime &rt, CollKind kind, const char *call, tshmem_team_t team, void *dst,
                       const void *src, size_t nbytes, int root, TeamInfo *info, bool looked_up = false);

}  // namespace tshmemi
