// Teams on the device: member k of a team is PE start + k * stride, read from this PE's team table (the host's
// entries mirrored to device memory, src/coll/team.cc; its address in the state's team_table).
// TSHMEM_TEAM_WORLD needs no table. team_of (the collectives) traps on a handle that is not live; team_any_of
// (the queries) answers size 0 for it.
#ifndef TSHMEM_DEVICE_IMPL_TEAM_CUH
#define TSHMEM_DEVICE_IMPL_TEAM_CUH

#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/state.cuh"
#include "tshmem/device/team_types.h"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// A team as (start, stride, size) plus this PE's index in it.
struct team_view {
  int start;
  int stride;
  int size;
  int my_index;
  /// Global PE number of member k.
  TSHMEMI_DEVICE int pe(int k) const { return start + k * stride; }
};

/// The table entry of `team`, or nullptr for a handle outside the table or before init. One global load per field.
TSHMEMI_DEVICE const tshmemi_team_entry *team_entry(tshmem_team_t team, const tshmemi_device_state &st) {
  const tshmemi_team_entry *table = st.team_table;
  if (table == nullptr || team < 0 || team >= TSHMEMI_TEAM_SLOTS) return nullptr;
  return table + team;
}

/// The view of any live team; size 0 (and my_index -1) for an unknown or destroyed one, or a node team that has
/// no (start, stride) form. World: O(1) from the state.
TSHMEMI_DEVICE team_view team_any_of(tshmem_team_t team, const tshmemi_device_state &st = tshmemi::state()) {
  if (team == TSHMEM_TEAM_WORLD) return team_view{0, 1, st.n_pes, st.my_pe};
  const tshmemi_team_entry *e = team_entry(team, st);
  if (e == nullptr) return team_view{0, 1, 0, -1};
  team_view v{e->start, e->stride, e->size, e->my_index};
  if (v.size < 0) v = team_view{0, 1, 0, -1};
  return v;
}

/// The view of a team for the collectives: WORLD, NODE (when its PEs are evenly strided) or a live split team
/// (its barrier words are its own: impl/coll.cuh). An unknown, destroyed or unusable team traps, naming it.
TSHMEMI_DEVICE team_view team_of(tshmem_team_t team, const tshmemi_device_state &st = tshmemi::state()) {
  if (team == TSHMEM_TEAM_WORLD || (team == TSHMEMX_TEAM_NODE && st.local_n_pes == st.n_pes))
    return team_view{0, 1, st.n_pes, st.my_pe};
  const team_view v = team_any_of(team, st);
  if (v.size <= 0)
    tshmemi::trap_bad_operator(team == TSHMEMX_TEAM_NODE ? "tshmem collective team (node PEs not evenly strided)"
                                                         : "tshmem collective team (unknown or destroyed handle)",
                               team, st.my_pe);
  return v;
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_TEAM_CUH
