// Host-blocking collectives (tshmemi_host_reduce/reduce_scatter/fcollect/alltoall/broadcast, tshmem_barrier): the
// collective's own checks, one checked rendezvous (the collective check, so PEs whose calls differ are named on
// every PE and nothing moves anywhere), then the work: on a GPU heap the on-stream kernel on tshmem's internal
// stream, waited for; on a heap in host memory the host itself (coll_host_mem.h).
#include "coll/coll_host.h"

#include <mutex>
#include <string>

#include "coll/coll_checks.h"
#include "coll/coll_launch.h"

namespace tshmemi {
namespace {

CollKind kind_of(HostKind kind) {
  switch (kind) {
    case HostKind::kReduce: return CollKind::kAllreduce;
    case HostKind::kReduceScatter: return CollKind::kReduceScatter;
    case HostKind::kFcollect: return CollKind::kFcollect;
    case HostKind::kAlltoall: return CollKind::kAlltoall;
    case HostKind::kBroadcast: return CollKind::kBroadcast;
    case HostKind::kTeamBarrier: break;
  }
  return CollKind::kBarrier;
}

/// Every check of `c` on this PE (the same on a GPU heap and in host memory). `known`: the team's lookup, when it
/// succeeded (null: the checks look it up, and refuse it).
Status check(const CollRuntime &rt, const HostCollective &c, const TeamInfo *known) {
  TeamInfo info = known != nullptr ? *known : TeamInfo{};
  const bool looked_up = known != nullptr;
  if (c.kind == HostKind::kReduce)
    return check_allreduce_args(rt, c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, &info, looked_up);
  if (c.kind == HostKind::kReduceScatter)
    return check_reduce_scatter_args(rt, c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, &info, looked_up);
  return check_move_args(rt, kind_of(c.kind), c.call, c.team, c.dst, c.src, c.count, c.root, &info, looked_up);
}

/// The on-stream kernel behind `c` on `stream` (a GPU heap).
Status launch_on(void *arg, tshmemx_stream_t stream) {
  const auto &[rt, c] = *static_cast<const std::pair<const CollRuntime &, const HostCollective &> *>(arg);
  if (c.kind == HostKind::kReduce)
    return coll_allreduce(rt, c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, stream, false);
  if (c.kind == HostKind::kReduceScatter)
    return coll_reduce_scatter(rt, c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, stream);
  return coll_move(rt, kind_of(c.kind), c.call, c.team, c.dst, c.src, c.count, c.root, stream, false);
}

/// The call as the collective check compares it across PEs: its arguments, and dst's heap offset (every PE must
/// name the same symmetric object).
CollectiveRequest describe(const SymmetricHeap &heap, const HostCollective &c) {
  CollectiveRequest r(c.call);
  r.arg("team", c.team);
  const int64_t count = static_cast<int64_t>(c.count);
  if (c.kind == HostKind::kReduce || c.kind == HostKind::kReduceScatter)
    r.arg("count", count);  // dtype and op are in the call's name (reduce_call_name)
  else if (c.kind == HostKind::kBroadcast)
    r.arg("nbytes", count).arg("root", c.root);
  else if (c.kind != HostKind::kTeamBarrier)
    r.arg("nbytes", count);
  r.offset = c.dst != nullptr && heap.contains(c.dst, 1) ? static_cast<int64_t>(heap.offset_of(c.dst)) : -1;
  r.offset_is_argument = true;
  r.offset_label = "with dst at heap offset";
  r.nothing_done = c.kind == HostKind::kTeamBarrier ? "the barrier was not passed" : "no dst was written";
  return r;
}

}  // namespace

const char *reduce_call_name(tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  // One name per (dtype, op), made once: the collective check keeps the pointer.
  static const auto names = [] {
    std::vector<std::string> all;
    for (int d = 0; d < TSHMEMX_NUM_DTYPES; ++d)
      for (int o = 0; o < TSHMEMX_NUM_OPS; ++o)
        all.push_back(format("tshmem_%s_%s_reduce", dtype_name(static_cast<tshmemx_dtype_t>(d)),
                             redop_name(static_cast<tshmemx_redop_t>(o))));
    return all;
  }();
  if (static_cast<unsigned>(dtype) >= TSHMEMX_NUM_DTYPES || static_cast<unsigned>(op) >= TSHMEMX_NUM_OPS)
    return "tshmem_<T>_<op>_reduce";
  return names[static_cast<size_t>(dtype) * TSHMEMX_NUM_OPS + static_cast<size_t>(op)].c_str();
}

const char *reduce_scatter_call_name(tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  static const auto names = [] {
    std::vector<std::string> all;
    for (int d = 0; d < TSHMEMX_NUM_DTYPES; ++d)
      for (int o = 0; o < TSHMEMX_NUM_OPS; ++o)
        all.push_back(format("tshmemx_%s_%s_reduce_scatter", dtype_name(static_cast<tshmemx_dtype_t>(d)),
                             redop_name(static_cast<tshmemx_redop_t>(o))));
    return all;
  }();
  if (static_cast<unsigned>(dtype) >= TSHMEMX_NUM_DTYPES || static_cast<unsigned>(op) >= TSHMEMX_NUM_OPS)
    return "tshmemx_<T>_<op>_reduce_scatter";
  return names[static_cast<size_t>(dtype) * TSHMEMX_NUM_OPS + static_cast<size_t>(op)].c_str();
}

Status host_collective(const CollRuntime &rt, CollectiveCheck &check_, Rendezvous &rendezvous, HostCollectives &host,
                       const HostCollective &c) {
  // Under TSHMEM_THREAD_MULTIPLE one host-blocking collective of this PE runs at a time, from its rendezvous to
  // its end: two threads' kernels must not reach the device in the other order than their rendezvous (the
  // kernels' call counters pair calls across PEs by order), nor two threads' rendezvous mix in host memory.
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> serial(one_at_a_time);
  const bool host_memory = !rt.mem.device_memory();
  // A GPU heap's rendezvous is job-wide (the kernels' words are the job's); in host memory a team without every
  // PE meets among its members. Either way a team the call cannot take is refused on each caller alike (the team
  // is the same on every member), before any waiting. An unknown team is a local failure that still joins the
  // job's rendezvous (the others may have passed a good one).
  TeamInfo info;
  const Status known = rt.teams.lookup(c.team, c.call, &info);
  const bool whole_job = known != TSHMEM_SUCCESS || info.size == rt.n_pes;
  if (!whole_job && !host_memory)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: team %d has %d of the job's %d PEs: on a GPU heap the host-blocking collectives rendezvous "
                     "job-wide (the symmetry check), so their team must hold every PE; use the on-stream form "
                     "(tshmemx_..._on_stream) or the device forms for a smaller team",
                     c.call, static_cast<int>(c.team), info.size, rt.n_pes);
  if (!whole_job) TSHMEM_CHECK(check_coll_team(rt, c.call, c.team, &info, true));  // members reachable: node-local
  CheckGroup *group = whole_job ? nullptr : &host.group(rt, c.team, info);
  CollectiveRequest request = describe(rt.heap, c);
  if (c.kind == HostKind::kTeamBarrier) {
    // Quiet and the checked rendezvous are the barrier, on every backend (no kernel).
    if (known != TSHMEM_SUCCESS) {
      request.local_status = known;
      request.local_error = last_error_message();
    }
    return group != nullptr ? rendezvous.barrier_in(*group, request) : rendezvous.barrier(request);
  }
  const Status local = check(rt, c, known == TSHMEM_SUCCESS ? &info : nullptr);  // the local verdict
  if (local != TSHMEM_SUCCESS) {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  HostMemCall call;
  call.kind = kind_of(c.kind);
  call.dst = c.dst;
  call.src = c.src;
  call.count = c.count;
  call.dtype = c.dtype;
  call.op = c.op;
  call.root = c.root;
  // Without the symmetry check nothing needs the members' calls before the root returns: a small broadcast goes
  // through the root's ring (broadcast_ring.h) and the root waits for no member.
  if (!CollectiveCheck::enabled() && host_memory && c.kind == HostKind::kBroadcast && known == TSHMEM_SUCCESS &&
      BroadcastRing::takes(c.team, info, c.count))
    return host.ring().run(rt, c.team, info, call, take_collective_note(request));
  if (host_memory && local == TSHMEM_SUCCESS) host.stage(rt, c.team, info, call);
  // Every member the same verdict, disagreeing PEs named; this is also the rendezvous: every src is ready.
  const Status agreed = group != nullptr ? check_.agree_in(*group, request) : check_.agree(request);
  if (agreed != TSHMEM_SUCCESS) {
    if (host_memory) host.stage(rt, TSHMEM_TEAM_INVALID, info, call);  // drops this call's staging
    return agreed;
  }
  if (host_memory) return host.run(rt, c.team, info, group, call);
  std::pair<const CollRuntime &, const HostCollective &> launch{rt, c};
  return coll_run_blocking(c.call, launch_on, &launch);
}

}  // namespace tshmemi
