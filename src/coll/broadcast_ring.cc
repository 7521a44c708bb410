#include "coll/broadcast_ring.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bounded_wait.h"
#include "bootstrap/node_sync.h"
#include "coll/coll_host_mem.h"

namespace tshmemi {
namespace {

constexpr uint64_t kEntries = TSHMEMI_HOST_COLL_RING_ENTRIES;

/// One broadcast as its root left it: `call` is stored last, with release. A line of its own, the data on the next:
/// a member waiting for the entry polls this line alone, so the root's data writes do not take it from the member.
struct alignas(64) EntryHeader {
  std::atomic<uint64_t> call;  ///< the broadcast's number on its team
  int32_t status;              ///< the root's verdict
  uint32_t bytes;              ///< data bytes, or on a refusal the bytes of the root's report
};
static_assert(sizeof(EntryHeader) == 64, "an entry's header is one cache line");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the ring's words are shared between processes");

/// Where this PE sees member k's ring of team slot `slot`.
char *ring_of(const CollRuntime &rt, const TeamInfo &info, int slot, int k) {
  const uint64_t base = rt.peer_bases[static_cast<size_t>(info.start + k * info.stride)];
  return reinterpret_cast<char *>(base + TSHMEMI_HOST_COLL_RING_OFFSET(slot));
}

/// Member k's count of broadcasts done (the first word of its ring).
std::atomic<uint64_t> &done_of(char *ring) { return *reinterpret_cast<std::atomic<uint64_t> *>(ring); }

EntryHeader &entry_of(char *ring, uint64_t call) {
  return *reinterpret_cast<EntryHeader *>(ring + 4096 + (call % kEntries) * TSHMEMI_HOST_COLL_RING_ENTRY_BYTES);
}

/// Waits until `word` reaches `target` (bounded: a member stopped or gone), polling as NodeSync does.
Status wait_until(const std::atomic<uint64_t> &word, uint64_t target, bool oversubscribed, const CollRuntime &rt,
                  const char *what, int pe) {
  for (unsigned polls = 0; polls < kNodePollsBeforeYield && !oversubscribed; ++polls)
    if (word.load(std::memory_order_acquire) >= target) return TSHMEM_SUCCESS;
  WaitClock clock(rt.boot.bounds(), rt.my_pe, format("PE %d %s (shared memory)", pe, what));
  while (word.load(std::memory_order_acquire) < target) {
    sched_yield();
    if (!clock.keep_waiting()) return set_error(TSHMEM_ERR_TIMEOUT, "%s", clock.expired_message().c_str());
  }
  return TSHMEM_SUCCESS;
}

bool oversubscribed(int members) {
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && members > cpus;
}

}  // namespace

bool BroadcastRing::takes(tshmem_team_t team, const TeamInfo &info, size_t nbytes) {
  return (team == TSHMEM_TEAM_WORLD || team == TSHMEMX_TEAM_NODE) && info.node_local && nbytes <= kMaxBytes;
}

Status BroadcastRing::run(const CollRuntime &rt, tshmem_team_t team, const TeamInfo &info, const HostMemCall &c,
                          const CollectiveRequest &request) {
  const CallScope scope(request.call);
  const int slot = team == TSHMEM_TEAM_WORLD ? 0 : 1;
  const int n = info.size, me = info.my_index, root = c.root;
  const bool busy = oversubscribed(n);
  const uint64_t call = ++calls_[slot];
  char *mine = ring_of(rt, info, slot, me);
  const bool ok = request.local_status == TSHMEM_SUCCESS;
  if (root < 0 || root >= n) {  // every member refused the same root (an argument): nobody waits for it
    done_of(mine).store(call, std::memory_order_release);
    return request.local_status;
  }
  Status root_status = TSHMEM_SUCCESS;
  std::string root_report;
  if (me == root) {
    // The entry was last read for broadcast call - kEntries: every other member must have done that one.
    const uint64_t needed = call > kEntries ? call - kEntries : 0;
    if (members_done_[slot] < needed) {
      uint64_t fewest = UINT64_MAX;
      for (int k = 0; k < n; ++k) {
        if (k == me) continue;
        const std::atomic<uint64_t> &done = done_of(ring_of(rt, info, slot, k));
        TSHMEM_CHECK(
            wait_until(done, needed, busy, rt, "to finish reading an earlier broadcast", info.start + k * info.stride));
        fewest = std::min(fewest, done.load(std::memory_order_acquire));
      }
      members_done_[slot] = fewest;
    }
    EntryHeader &entry = entry_of(mine, call);
    char *data = reinterpret_cast<char *>(&entry + 1);
    if (ok) {
      std::memcpy(data, c.src, c.count);
      entry.bytes = static_cast<uint32_t>(c.count);
    } else {
      root_report = request.report().substr(0, kMaxBytes);
      std::memcpy(data, root_report.data(), root_report.size());
      entry.bytes = static_cast<uint32_t>(root_report.size());
    }
    entry.status = request.local_status;
    entry.call.store(call, std::memory_order_release);  // publishes the data and verdict
    if (ok && c.dst != c.src) std::memcpy(c.dst, c.src, c.count);
    root_status = request.local_status;
  } else {
    const EntryHeader &entry = entry_of(ring_of(rt, info, slot, root), call);
    TSHMEM_CHECK(
        wait_until(entry.call, call, busy, rt, "(the root) to post a broadcast", info.start + root * info.stride));
    const char *data = reinterpret_cast<const char *>(&entry + 1);
    root_status = static_cast<Status>(entry.status);
    if (root_status != TSHMEM_SUCCESS)
      root_report.assign(data, std::min<size_t>(entry.bytes, kMaxBytes));
    else if (ok)
      std::memcpy(c.dst, data, c.count);
  }
  done_of(mine).store(call, std::memory_order_release);  // after the reads above: the root may reuse the entry
  if (ok && root_status == TSHMEM_SUCCESS) return TSHMEM_SUCCESS;

  // The failing PEs this PE knows of: the root (every member knows its verdict) and itself.
  const int my_pe = info.start + me * info.stride, root_pe = info.start + root * info.stride;
  const std::string call_name =
      request.note.empty() ? std::string(request.call) : request.note.substr(0, request.note.find('('));
  std::vector<std::pair<int, std::string>> failing;
  if (root_status != TSHMEM_SUCCESS) failing.emplace_back(root_pe, root_report);
  if (!ok && me != root) failing.emplace_back(my_pe, request.report());
  std::sort(failing.begin(), failing.end());
  std::string message = format("%s failed on PE%s ", call_name.c_str(), failing.size() > 1 ? "s" : "");
  for (size_t i = 0; i < failing.size(); ++i) message += format("%s%d", i > 0 ? ", " : "", failing[i].first);
  message += ":";
  for (const auto &[pe, text] : failing) message += format(" PE %d: %s;", pe, text.c_str());
  if (root_status != TSHMEM_SUCCESS)
    message += format(" %s on any PE.", request.nothing_done);
  else
    message += format(
        " %s on PE %d (built without the symmetry check, a broadcast's root and other members do not "
        "wait for a member's verdict).",
        request.nothing_done, my_pe);
  const Status status = root_status != TSHMEM_SUCCESS && (ok || root_pe < my_pe) ? root_status : request.local_status;
  return set_error_message(status, message);
}

}  // namespace tshmemi
