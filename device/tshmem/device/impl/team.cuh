// The predefined teams on the device: member k of a team is PE start + k * stride (src/coll/team.cc is the
// host twin). TSHMEM_TEAM_WORLD is every PE; TSHMEMX_TEAM_NODE the load/store-reachable PEs (peer_base != 0),
// which must be evenly strided (the host refuses collectives otherwise).
#ifndef TSHMEM_DEVICE_IMPL_TEAM_CUH
#define TSHMEM_DEVICE_IMPL_TEAM_CUH

#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/state.cuh"
#include "tshmem/tshmemx.h"

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

/// The view of a predefined team. World: O(1). Node on a multi-node job: scans the peer table once
/// (O(n_pes) constant reads); call it once per kernel and pass the view on. An unknown team traps.
TSHMEMI_DEVICE team_view team_of(tshmem_team_t team, const tshmemi_device_state &st = tshmemi::state()) {
  team_view v{0, 1, st.n_pes, st.my_pe};
  if (team == TSHMEM_TEAM_WORLD || (team == TSHMEMX_TEAM_NODE && st.local_n_pes == st.n_pes)) return v;
  if (team != TSHMEMX_TEAM_NODE) tshmemi::trap_bad_operator("tshmem team (unknown team)", team, st.my_pe);
  int first = -1, second = -1;
  for (int pe = 0; pe < st.n_pes && second < 0; ++pe)
    if (st.peer_base[pe] != 0) (first < 0 ? first : second) = pe;
  v.start = first;
  v.stride = second > first ? second - first : 1;
  v.size = st.local_n_pes;
  v.my_index = (st.my_pe - first) / v.stride;
  return v;
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_TEAM_CUH
