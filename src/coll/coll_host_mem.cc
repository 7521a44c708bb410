#include "coll/coll_host_mem.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "bootstrap/agree.h"
#include "bootstrap/node_sync.h"
#include "coll/coll_checks.h"
#include "coll/host_reduce.h"
#include "tshmem/device/internal_regions.h"

namespace tshmemi {

static_assert(2 * 64 + sizeof(PeReport) <= TSHMEMI_HOST_COLL_SYNC_BYTES, "a team's slots and report fit its 2 KiB");

/// A team's members, meeting through NodeSync slots in their heaps.
class HostCollectives::TeamGroup : public CheckGroup {
 public:
  TeamGroup(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, uint64_t first_call) : info_(info) {
    std::vector<void *> pages;
    for (int k = 0; k < info.size; ++k) {
      const uint64_t base = rt.peer_bases[static_cast<size_t>(info.start + k * info.stride)];
      pages.push_back(reinterpret_cast<void *>(base + TSHMEMI_HOST_COLL_SYNC_OFFSET(team)));
    }
    reports_ = pages;
    for (void *&r : reports_) r = static_cast<char *>(r) + 128;
    sync_ = std::make_unique<NodeSync>(std::move(pages), info.my_index, &rt.boot.bounds(), first_call);
  }
  int size() const override { return info_.size; }
  int pe(int index) const override { return info_.start + index * info_.stride; }
  Status allreduce_min(const int64_t *in, int64_t *out, int count) override {
    return sync_->allreduce(in, out, count, ReduceOp::kMin);
  }
  Status gather(const PeReport &mine, std::vector<PeReport> *all) override {
    // Written before the barrier, read after it; rewritten only after the next call's rendezvous, which every
    // member enters after reading.
    std::memcpy(reports_[static_cast<size_t>(info_.my_index)], &mine, sizeof mine);
    TSHMEM_CHECK(barrier());
    all->resize(reports_.size());
    for (size_t k = 0; k < reports_.size(); ++k) std::memcpy(&(*all)[k], reports_[k], sizeof(PeReport));
    return TSHMEM_SUCCESS;
  }
  uint64_t next_sequence() override { return ++sequence_; }
  Status barrier() { return sync_->allreduce(nullptr, nullptr, 0, ReduceOp::kMin); }

 private:
  TeamInfo info_;
  std::unique_ptr<NodeSync> sync_;
  std::vector<void *> reports_;
  uint64_t sequence_ = 0;
};

HostCollectives::HostCollectives() = default;
HostCollectives::~HostCollectives() = default;

void HostCollectives::on_split(tshmem_team_t team, uint64_t first_call) {
  const std::lock_guard<std::mutex> lock(mutex_);
  groups_[team].reset();
  first_call_[team] = first_call;
}

CheckGroup &HostCollectives::group(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!groups_[team]) groups_[team] = std::make_unique<TeamGroup>(rt, team, info, first_call_[team]);
  return *groups_[team];
}

namespace {

/// Member k's view of `ptr` (an address in this PE's heap).
template <class T>
T *at(const CollRuntime &rt, const TeamInfo &info, T *ptr, int k) {
  const uint64_t own = rt.peer_bases[static_cast<size_t>(rt.my_pe)];
  const uint64_t base = rt.peer_bases[static_cast<size_t>(info.start + k * info.stride)];
  return reinterpret_cast<T *>(base + (reinterpret_cast<uintptr_t>(ptr) - own));
}

/// The bytes of this PE's source that the other members read (0: none).
size_t source_bytes(const HostMemCall &c, int n, int me) {
  const size_t members = static_cast<size_t>(n);
  switch (c.kind) {
    case CollKind::kAllreduce: return c.count * dtype_size(c.dtype);
    case CollKind::kReduceScatter: return c.count * dtype_size(c.dtype) * members;
    case CollKind::kFcollect: return c.count;
    case CollKind::kAlltoall: return c.count * members;
    case CollKind::kBroadcast: return me == c.root ? c.count : 0;
    case CollKind::kBarrier: break;
  }
  return 0;
}

/// From this many bytes an out-of-place all-reduce splits the elements among the members (each reduces its share
/// and pushes it to every member); below, each member reduces every element into its own dst.
constexpr size_t kSplitBytes = 64 * 1024;

/// WORLD's and NODE's staging slot; -1 for other teams.
int stage_slot(tshmem_team_t team) { return team == TSHMEM_TEAM_WORLD ? 0 : team == TSHMEMX_TEAM_NODE ? 1 : -1; }

/// On one node: read the members' heaps (their sources, or with `staged` their staged copies at `stage_offset`).
Status run_local(const CollRuntime &rt, const TeamInfo &info, const HostMemCall &c, bool staged, size_t stage_offset,
                 const std::function<Status()> &meet_closing) {
  const int n = info.size, me = info.my_index;
  char *dst = static_cast<char *>(c.dst);
  // Staged: every member's source is its staging (a copy), and nobody reads a source after the call.
  const char *src = staged ? reinterpret_cast<const char *>(rt.peer_bases[static_cast<size_t>(rt.my_pe)] + stage_offset)
                           : static_cast<const char *>(c.src);
  const auto meet = [&]() -> Status { return staged ? TSHMEM_SUCCESS : meet_closing(); };
  switch (c.kind) {
    case CollKind::kAllreduce:
    case CollKind::kReduceScatter: {
      const size_t elem = dtype_size(c.dtype);
      const size_t offset = c.kind == CollKind::kReduceScatter ? static_cast<size_t>(me) * c.count * elem : 0;
      // The members' sources: on the stack for teams of up to kInlineMembers (no allocation in a small call).
      constexpr int kInlineMembers = 64;
      const void *inline_srcs[kInlineMembers];
      std::vector<const void *> more_srcs(n > kInlineMembers ? static_cast<size_t>(n) : 0);
      const void **srcs = n > kInlineMembers ? more_srcs.data() : inline_srcs;
      for (int k = 0; k < n; ++k) srcs[k] = at(rt, info, src + offset, k);
      if (staged || (c.dst != c.src && (c.kind == CollKind::kReduceScatter || c.count * elem < kSplitBytes))) {
        host_reduce(c.dtype, c.op, dst, srcs, n, c.count);
        return meet();
      }
      if (c.dst != c.src) {
        // Large, out of place: each member reduces its share of the elements (the same fold per element) and
        // stores the result into every member's dst, so each element is reduced once, not on every member.
        const size_t first = c.count * static_cast<size_t>(me) / static_cast<size_t>(n);
        const size_t last = c.count * static_cast<size_t>(me + 1) / static_cast<size_t>(n);
        for (int k = 0; k < n; ++k) srcs[k] = static_cast<const char *>(srcs[k]) + first * elem;
        char *mine = dst + first * elem;
        host_reduce(c.dtype, c.op, mine, srcs, n, last - first);
        for (int i = 1; i < n; ++i) std::memcpy(at(rt, info, mine, (me + i) % n), mine, (last - first) * elem);
        return meet();  // every dst complete, every source read
      }
      // In place: the other members still read this dst (their src) until all have met.
      std::vector<char> result(c.count * elem);
      host_reduce(c.dtype, c.op, result.data(), srcs, n, c.count);
      TSHMEM_CHECK(meet());
      std::memcpy(dst, result.data(), result.size());
      return TSHMEM_SUCCESS;
    }
    case CollKind::kFcollect:
      for (int i = 0; i < n; ++i) {
        const int k = (me + i) % n;  // start at this member: the members read different heaps at once
        std::memcpy(dst + static_cast<size_t>(k) * c.count, at(rt, info, src, k), c.count);
      }
      return meet();
    case CollKind::kAlltoall:
      for (int i = 0; i < n; ++i) {
        const int k = (me + i) % n;
        std::memcpy(dst + static_cast<size_t>(k) * c.count, at(rt, info, src + static_cast<size_t>(me) * c.count, k),
                    c.count);
      }
      return meet();
    case CollKind::kBroadcast:
      if (me != c.root)
        std::memcpy(dst, at(rt, info, src, c.root), c.count);
      else if (c.dst != c.src)
        std::memcpy(dst, c.src, c.count);
      return meet();
    case CollKind::kBarrier: return TSHMEM_SUCCESS;
  }
  return TSHMEM_SUCCESS;
}

/// The world team across nodes: the data travels through the bootstrap's collectives (complete when they return).
Status run_spanning(const CollRuntime &rt, const HostMemCall &c) {
  const size_t n = static_cast<size_t>(rt.n_pes), me = static_cast<size_t>(rt.my_pe);
  char *dst = static_cast<char *>(c.dst);
  const char *src = static_cast<const char *>(c.src);
  switch (c.kind) {
    case CollKind::kAllreduce:
    case CollKind::kReduceScatter: {
      const size_t bytes = c.count * dtype_size(c.dtype);
      const size_t each = c.kind == CollKind::kReduceScatter ? bytes * n : bytes;
      std::vector<char> all(each * n);
      TSHMEM_CHECK(rt.boot.allgather(src, all.data(), each));
      const size_t offset = c.kind == CollKind::kReduceScatter ? me * bytes : 0;
      std::vector<const void *> srcs(n);
      for (size_t k = 0; k < n; ++k) srcs[k] = all.data() + k * each + offset;
      host_reduce(c.dtype, c.op, dst, srcs.data(), static_cast<int>(n), c.count);
      return TSHMEM_SUCCESS;
    }
    case CollKind::kFcollect: return rt.boot.allgather(src, dst, c.count);
    case CollKind::kAlltoall: {
      std::vector<char> all(c.count * n * n);
      TSHMEM_CHECK(rt.boot.allgather(src, all.data(), c.count * n));
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + k * c.count, all.data() + (k * n + me) * c.count, c.count);
      return TSHMEM_SUCCESS;
    }
    case CollKind::kBroadcast: {
      std::vector<char> staged(c.count);
      if (static_cast<int>(me) == c.root) std::memcpy(staged.data(), src, c.count);
      TSHMEM_CHECK(rt.boot.broadcast(staged.data(), c.count, c.root));
      std::memcpy(dst, staged.data(), c.count);
      return TSHMEM_SUCCESS;
    }
    case CollKind::kBarrier: return TSHMEM_SUCCESS;
  }
  return TSHMEM_SUCCESS;
}

}  // namespace

void HostCollectives::stage(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, const HostMemCall &c) {
  staged_ = false;
  const int slot = stage_slot(team);
  if (slot < 0 || !info.node_local) return;
  // The largest source of any member decides (the same on every member), so that all stage or none does.
  size_t largest = 0;
  for (int k = 0; k < info.size; ++k) largest = std::max(largest, source_bytes(c, info.size, k));
  if (largest > TSHMEMI_HOST_COLL_STAGE_BYTES) return;
  const uint64_t parity = staged_calls_[slot] & 1;
  char *mine = reinterpret_cast<char *>(rt.peer_bases[static_cast<size_t>(rt.my_pe)] +
                                        TSHMEMI_HOST_COLL_STAGE_OFFSET(slot, parity));
  // Safe to overwrite: the members read this parity's copies two staged calls ago, and every one of them has
  // since arrived at the last staged call's rendezvous, which this PE has passed.
  const size_t mine_bytes = source_bytes(c, info.size, info.my_index);
  if (mine_bytes != 0) std::memcpy(mine, c.src, mine_bytes);
  staged_ = true;
}

Status HostCollectives::run(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, CheckGroup *group,
                            const HostMemCall &c) {
  if (!info.node_local) return run_spanning(rt, c);
  TeamGroup *members = static_cast<TeamGroup *>(group);
  const int slot = stage_slot(team);
  const bool staged = staged_ && slot >= 0;
  staged_ = false;
  const size_t offset = staged ? TSHMEMI_HOST_COLL_STAGE_OFFSET(slot, staged_calls_[slot] & 1) : 0;
  if (staged) ++staged_calls_[slot];  // the rendezvous passed on every member: this parity is in use
  return run_local(rt, info, c, staged, offset,
                   [&]() -> Status { return members != nullptr ? members->barrier() : rt.boot.barrier(); });
}

}  // namespace tshmemi
