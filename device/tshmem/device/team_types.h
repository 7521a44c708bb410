/*
 * Team handles, shared by the C API and the device API. Plain C, no CUDA: tshmem/tshmemx.h includes it for the
 * host calls that take a team, and the device API (impl/team.cuh) for the kernels that do. It lives on the device
 * side so that the device headers never include the host API's headers (docs/architecture.md, "Include rules").
 */
#ifndef TSHMEM_DEVICE_TEAM_TYPES_H
#define TSHMEM_DEVICE_TEAM_TYPES_H

#include <stdint.h>

/** A team of PEs: the predefined ones (NVSHMEM's numbering) and those made by tshmem_team_split_strided. A
 *  handle indexes this PE's team table; PEs may hold different handles for the same split team. */
typedef int32_t tshmem_team_t;
#define TSHMEM_TEAM_INVALID (-1)
#define TSHMEM_TEAM_WORLD 0 /**< Every PE. */
#define TSHMEMX_TEAM_NODE 2 /**< The PEs of this node (load/store reachable); equals WORLD on one node. */
/** Most teams alive at once on one PE, the predefined ones and the unused handle 1 included (a split that would
 *  exceed it fails on every PE, nothing created). */
#define TSHMEM_MAX_TEAMS 32

#endif /* TSHMEM_DEVICE_TEAM_TYPES_H */
