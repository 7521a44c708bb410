#include "coll/team.h"

#include <algorithm>
#include <cstdint>

#include "bootstrap/agree.h"
#include "tshmem/device/internal_regions.h"  // the split teams' barrier words, TSHMEMI_COLL_SPANS_NODES

namespace tshmemi {

static_assert(TSHMEMI_TEAM_SLOTS == TSHMEM_MAX_TEAMS, "the device team table holds every team");
static_assert(TSHMEM_TEAM_WORLD == 0 && TSHMEMX_TEAM_NODE == 2, "NVSHMEM's numbering: handle 1 stays unused");

namespace {

constexpr int kFirstSplitHandle = 3;

bool valid_handle(tshmem_team_t team) { return team >= 0 && team < TSHMEMI_TEAM_SLOTS; }

}  // namespace

void TeamTable::init(const Bootstrap &boot) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::fill(std::begin(entries_), std::end(entries_), tshmemi_team_entry{0, 0, 0, -1});
  std::fill(std::begin(node_local_), std::end(node_local_), false);
  entries_[TSHMEM_TEAM_WORLD] = {0, 1, boot.size(), boot.rank()};
  node_local_[TSHMEM_TEAM_WORLD] = boot.local_size() == boot.size();
  local_n_pes_ = boot.local_size();
  // The node team: this node's PEs, which must be evenly strided to have a (start, stride) form.
  const std::vector<int> &pes = boot.local_pes();
  tshmemi_team_entry node{pes.front(), pes.size() > 1 ? pes[1] - pes[0] : 1, static_cast<int>(pes.size()),
                          boot.local_rank()};
  for (size_t k = 0; k < pes.size(); ++k)
    if (pes[k] != node.start + static_cast<int>(k) * node.stride) node.size = -1;
  entries_[TSHMEMX_TEAM_NODE] = node;
  node_local_[TSHMEMX_TEAM_NODE] = true;
  node_pes_ = pe_list(pes);
}

Status TeamTable::lookup(tshmem_team_t team, const char *call, TeamInfo *out) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!valid_handle(team) || entries_[team].size == 0)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: unknown team %d (TSHMEM_TEAM_WORLD = 0, TSHMEMX_TEAM_NODE = 2, or a live handle from "
                     "tshmem_team_split_strided; destroyed handles are refused)",
                     call, static_cast<int>(team));
  const tshmemi_team_entry &e = entries_[team];
  if (e.size < 0)
    return set_error(TSHMEM_ERR_CONFIG,
                     "%s: TSHMEMX_TEAM_NODE: this node's PEs (%s) are not evenly strided; launch PEs in blocks or "
                     "round-robin per node",
                     call, node_pes_.c_str());
  out->start = e.start;
  out->stride = e.stride;
  out->size = e.size;
  out->my_index = e.my_index;
  out->node_local = node_local_[team];
  out->predefined = team == TSHMEM_TEAM_WORLD || team == TSHMEMX_TEAM_NODE;
  out->spans_nodes = TSHMEMI_COLL_SPANS_NODES(team, entries_[TSHMEM_TEAM_WORLD].size, local_n_pes_);
  return TSHMEM_SUCCESS;
}

Status TeamTable::free_handle(const char *call, tshmem_team_t *out) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (int h = kFirstSplitHandle; h < TSHMEMI_TEAM_SLOTS; ++h)
    if (entries_[h].size == 0) {
      *out = h;
      return TSHMEM_SUCCESS;
    }
  return set_error(TSHMEM_ERR_INVALID_ARG,
                   "%s: this PE already holds %d live split teams, the most TSHMEM_MAX_TEAMS (%d) allows; destroy one "
                   "first",
                   call, TSHMEMI_TEAM_SLOTS - kFirstSplitHandle, TSHMEM_MAX_TEAMS);
}

void TeamTable::set(tshmem_team_t handle, int start, int stride, int size, int my_index, bool node_local) {
  const std::lock_guard<std::mutex> lock(mutex_);
  entries_[handle] = {start, stride, size, my_index};
  node_local_[handle] = node_local;
}

bool TeamTable::is_free(tshmem_team_t handle) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return valid_handle(handle) && entries_[handle].size == 0;
}

void TeamTable::clear(tshmem_team_t handle) {
  const std::lock_guard<std::mutex> lock(mutex_);
  entries_[handle] = {0, 0, 0, -1};
  node_local_[handle] = false;
}

void TeamTable::snapshot(tshmemi_team_entry out[TSHMEMI_TEAM_SLOTS]) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::copy(std::begin(entries_), std::end(entries_), out);
}

namespace {

// The split as the collective check compares it across PEs.
CollectiveRequest split_request(tshmem_team_t parent, int start, int stride, int size) {
  CollectiveRequest r("tshmem_team_split_strided");
  r.arg("parent", parent).arg("start", start).arg("stride", stride).arg("size", size);
  return r;
}

Status check_split(const TeamInfo &parent_info, tshmem_team_t parent, int start, int stride, int size,
                   const tshmem_team_t *new_team) {
  const char *call = "tshmem_team_split_strided";
  const int n = parent_info.size;
  if (new_team == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: new_team is NULL", call);
  if (size < 1) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: size %d: a team has at least 1 PE", call, size);
  if (stride < 1) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: stride %d: must be at least 1", call, stride);
  if (start < 0 || start >= n)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: start %d: outside parent team %d's PE indices [0, %d)", call, start,
                     static_cast<int>(parent), n);
  const int64_t last = static_cast<int64_t>(start) + static_cast<int64_t>(size - 1) * stride;
  if (last >= n)
    return set_error(
        TSHMEM_ERR_INVALID_ARG,
        "%s: start %d, stride %d, size %d: the last member, start + (size - 1) * stride = %lld, is outside "
        "parent team %d's PE indices [0, %d)",
        call, start, stride, size, static_cast<long long>(last), static_cast<int>(parent), n);
  return TSHMEM_SUCCESS;
}

Status mirror_to_device(const TeamTable &teams, DeviceState *device_state) {
  if (device_state == nullptr) return TSHMEM_SUCCESS;
  tshmemi_team_entry entries[TSHMEMI_TEAM_SLOTS];
  teams.snapshot(entries);
  return device_state->upload_teams(entries);
}

}  // namespace

Status team_split_strided(TeamTable &teams, const Bootstrap &boot, CollectiveCheck &check, DeviceState *device_state,
                          tshmem_team_t parent, int start, int stride, int size, tshmem_team_t *new_team) {
  const char *call = "tshmem_team_split_strided";
  // Two threads splitting at once (TSHMEM_THREAD_MULTIPLE) must not pick the same free handle.
  static std::mutex split_mutex;
  const std::lock_guard<std::mutex> lock(split_mutex);
  TeamInfo p;
  TSHMEM_CHECK(teams.lookup(parent, call, &p));
  // Only the parent's members call; the rendezvous is job-wide, so a smaller parent fails here, on each caller
  // alike, before any PE waits for the others.
  if (p.size != boot.size())
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: parent team %d has %d of the job's %d PEs: tshmem splits only teams that span the job (its "
                     "checked rendezvous is job-wide); split TSHMEM_TEAM_WORLD",
                     call, static_cast<int>(parent), p.size, boot.size());

  CollectiveRequest request = split_request(parent, start, stride, size);
  Status local = check_split(p, parent, start, stride, size, new_team);
  const int offset = p.my_index - start;
  const bool member = local == TSHMEM_SUCCESS && offset >= 0 && offset % stride == 0 && offset / stride < size;
  tshmem_team_t handle = TSHMEM_TEAM_INVALID;
  if (member) local = teams.free_handle(call, &handle);
  if (local != TSHMEM_SUCCESS) {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  // Every PE the same verdict, disagreeing PEs named; then the members agree on one handle, free on each of them
  // (non-members offer every handle): a split team's collectives use barrier words indexed by handle, which must
  // be the same words on every member (tshmem/device/impl/coll.cuh).
  int64_t offered[TSHMEMI_TEAM_SLOTS], common[TSHMEMI_TEAM_SLOTS];
  for (int h = 0; h < TSHMEMI_TEAM_SLOTS; ++h) offered[h] = member ? (teams.is_free(h) ? 1 : 0) : 1;
  TSHMEM_CHECK(check.agree_then_min(request, offered, common, TSHMEMI_TEAM_SLOTS));
  handle = TSHMEM_TEAM_INVALID;
  for (int h = kFirstSplitHandle; h < TSHMEMI_TEAM_SLOTS && handle == TSHMEM_TEAM_INVALID; ++h)
    if (common[h] == 1) handle = h;
  if (handle == TSHMEM_TEAM_INVALID)  // the same answer on every PE
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: no team handle is free on every member of the new team (each holds at most %d split teams; "
                     "the members' live teams together take every handle): destroy a team on the members first",
                     call, TSHMEMI_TEAM_SLOTS - kFirstSplitHandle);

  if (!member) {
    *new_team = TSHMEM_TEAM_INVALID;
    return TSHMEM_SUCCESS;
  }
  const int team_start = p.start + start * p.stride, team_stride = p.stride * stride;
  const std::vector<int> &node = boot.local_pes();
  bool node_local = true;
  for (int k = 0; k < size; ++k)
    node_local = node_local && std::find(node.begin(), node.end(), team_start + k * team_stride) != node.end();
  teams.set(handle, team_start, team_stride, size, offset / stride, node_local);
  const Status mirrored = mirror_to_device(teams, device_state);
  if (mirrored != TSHMEM_SUCCESS) {
    teams.clear(handle);
    return mirrored;
  }
  *new_team = handle;
  return TSHMEM_SUCCESS;
}

Status team_destroy(TeamTable &teams, MemBackend &mem, DeviceState *device_state, tshmem_team_t team) {
  const char *call = "tshmem_team_destroy";
  if (team == TSHMEM_TEAM_WORLD || team == TSHMEMX_TEAM_NODE)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: team %d is predefined (TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE): it "
                     "lives until tshmem_finalize",
                     call, static_cast<int>(team));
  TeamInfo info;
  if (team < kFirstSplitHandle) {
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: team %d is no handle from tshmem_team_split_strided", call,
                     static_cast<int>(team));
  }
  TSHMEM_CHECK(teams.lookup(team, call, &info));
  // The handle's barrier words go back to zero, the state a later split that takes the handle starts from. No
  // member writes them any more: each member's writes here belong to a collective this PE has completed.
  TSHMEM_CHECK(mem.quiet());  // this PE's kernels (GPU backends) have finished
  char *words = static_cast<char *>(mem.local_base()) + TSHMEMI_COLL_TEAM_SYNC_OFFSET(team);
  TSHMEM_CHECK(mem.zero(words, TSHMEMI_COLL_TEAM_SYNC_BYTES));
  teams.clear(team);
  return mirror_to_device(teams, device_state);
}

}  // namespace tshmemi
