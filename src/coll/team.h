// The team table: every team this PE knows as (start, stride, size, my index), indexed by handle. WORLD (0) and
// NODE (2) are filled at init from the bootstrap, split teams by tshmem_team_split_strided. The device reads a
// mirror of the same entries (tshmem/device/impl/team.cuh), so the node team has one rule: the host's.
#pragma once

#include <mutex>
#include <string>

#include "bootstrap/bootstrap.h"
#include "bootstrap/collective_check.h"
#include "common/error.h"
#include "mem/backend.h"
#include "state/device_state.h"
#include "tshmem/device/state_types.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// Team member k is PE start + k * stride.
struct TeamInfo {
  int start = 0;
  int stride = 1;
  int size = 0;
  int my_index = -1;
  bool node_local = false;   ///< every member is load/store reachable from this PE
  bool predefined = false;   ///< WORLD or NODE (their collectives share barrier words and use the LL area)
  bool spans_nodes = false;  ///< its collectives take the spanning path (TSHMEMI_COLL_SPANS_NODES)
};

class TeamTable {
 public:
  /// Fills WORLD and NODE from the bootstrap; every other handle free.
  void init(const Bootstrap &boot);
  /// TSHMEM_ERR_INVALID_ARG naming `call` for an unknown or destroyed team; TSHMEM_ERR_CONFIG for the node team
  /// when the node's PEs are not evenly strided.
  Status lookup(tshmem_team_t team, const char *call, TeamInfo *out) const;
  /// The lowest free handle, or TSHMEM_ERR_INVALID_ARG naming `call` and the limit.
  Status free_handle(const char *call, tshmem_team_t *out) const;
  /// Records a split team under `handle` (from free_handle) / frees it.
  void set(tshmem_team_t handle, int start, int stride, int size, int my_index, bool node_local);
  void clear(tshmem_team_t handle);
  bool is_free(tshmem_team_t handle) const;
  /// A copy of the entries for the device mirror.
  void snapshot(tshmemi_team_entry out[TSHMEMI_TEAM_SLOTS]) const;

 private:
  mutable std::mutex mutex_;  // split/destroy against queries under TSHMEM_THREAD_MULTIPLE
  tshmemi_team_entry entries_[TSHMEMI_TEAM_SLOTS] = {};
  bool node_local_[TSHMEMI_TEAM_SLOTS] = {};
  int local_n_pes_ = 0;   ///< PEs on this node (the spanning decision)
  std::string node_pes_;  ///< this node's PEs, for the message when they are not evenly strided
};

/// The collective split (tshmem_team_split_strided's body): agreed through `check`; the new team goes into `teams`
/// and, where there is one, the device's mirror of the table (`device_state`, may be null). *new_team is set on
/// success only.
Status team_split_strided(TeamTable &teams, const Bootstrap &boot, CollectiveCheck &check, DeviceState *device_state,
                          tshmem_team_t parent, int start, int stride, int size, tshmem_team_t *new_team);
/// tshmem_team_destroy's body: its barrier words in `mem` go back to zero, the handle is freed in `teams` and the
/// device's mirror (`device_state`, may be null).
Status team_destroy(TeamTable &teams, MemBackend &mem, DeviceState *device_state, tshmem_team_t team);

}  // namespace tshmemi
