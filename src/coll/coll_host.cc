// Host-blocking collectives (tshmemi_host_reduce/fcollect/alltoall/broadcast, tshmem_barrier): the on-stream
// collective's own checks, one checked rendezvous (the collective check, so PEs whose calls differ are named
// on every PE and nothing is launched anywhere), then the on-stream kernel on tshmem's internal stream, waited for.
#include "coll/coll_host.h"

#include <mutex>

#include "coll/coll_launch.h"

namespace tshmemi {
namespace {

/// The on-stream collective behind `c`: its checks only, or checks and launch on `stream`.
Status run(const CollRuntime &rt, const HostCollective &c, tshmemx_stream_t stream, bool check_only) {
  if (c.kind == HostKind::kReduce)
    return coll_allreduce(rt, c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, stream, check_only);
  if (c.kind == HostKind::kFcollect)
    return coll_move(rt, CollKind::kFcollect, c.call, c.team, c.dst, c.src, c.count, 0, stream, check_only);
  if (c.kind == HostKind::kAlltoall)
    return coll_move(rt, CollKind::kAlltoall, c.call, c.team, c.dst, c.src, c.count, 0, stream, check_only);
  if (c.kind == HostKind::kBroadcast)
    return coll_move(rt, CollKind::kBroadcast, c.call, c.team, c.dst, c.src, c.count, c.root, stream, check_only);
  return set_error(TSHMEM_ERR_INTERNAL, "%s: no kernel for this collective", c.call);
}

/// What coll_run_blocking hands back to launch_on.
struct Launch {
  const CollRuntime &rt;
  const HostCollective &c;
};

Status launch_on(void *arg, tshmemx_stream_t stream) {
  const Launch &launch = *static_cast<const Launch *>(arg);
  return run(launch.rt, launch.c, stream, false);
}

/// The call as the collective check compares it across PEs: its arguments, and dst's heap offset (every PE must
/// name the same symmetric object).
CollectiveRequest describe(const SymmetricHeap &heap, const HostCollective &c) {
  CollectiveRequest r(c.call);
  r.arg("team", c.team);
  const int64_t count = static_cast<int64_t>(c.count);
  if (c.kind == HostKind::kReduce)
    r.arg("count", count).arg("dtype", c.dtype).arg("op", c.op);
  else if (c.kind == HostKind::kBroadcast)
    r.arg("nbytes", count).arg("root", c.root);
  else if (c.kind != HostKind::kTeamBarrier)
    r.arg("nbytes", count);
  r.offset = c.dst != nullptr && heap.contains(c.dst, 1) ? static_cast<int64_t>(heap.offset_of(c.dst)) : -1;
  r.offset_is_argument = true;
  r.offset_label = "with dst at heap offset";
  return r;
}

}  // namespace

Status host_collective(const CollRuntime &rt, CollectiveCheck &check, Rendezvous &rendezvous, const HostCollective &c) {
  // Under TSHMEM_THREAD_MULTIPLE one host-blocking collective of this PE runs at a time, from its rendezvous to
  // the end of its kernel: two threads' kernels must not reach the device in the other order than their
  // rendezvous (the kernels' call counters pair calls across PEs by order).
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> serial(one_at_a_time);
  // The rendezvous is job-wide: a team without every PE would leave its members waiting for PEs that never
  // call. Refused on each caller alike (the team is the same on every member), before any waiting. An
  // unknown team is a local failure that still joins the rendezvous (the others may have passed a good one).
  TeamInfo info;
  const Status known = rt.teams.lookup(c.team, c.call, &info);
  if (known == TSHMEM_SUCCESS && info.size != rt.n_pes)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: team %d has %d of the job's %d PEs: the host-blocking collectives rendezvous job-wide "
                     "(the symmetry check), so their team must hold every PE; use the on-stream form "
                     "(tshmemx_..._on_stream) or the device forms for a smaller team",
                     c.call, static_cast<int>(c.team), info.size, rt.n_pes);
  CollectiveRequest request = describe(rt.heap, c);
  if (c.kind == HostKind::kTeamBarrier) {
    // A team of every PE: quiet and the checked rendezvous are the barrier, on every backend (no kernel).
    if (known != TSHMEM_SUCCESS) {
      request.local_status = known;
      request.local_error = last_error_message();
    }
    return rendezvous.barrier(request);
  }
  // The local verdict: the on-stream call's checks.
  const Status local = run(rt, c, nullptr, true);
  if (local != TSHMEM_SUCCESS) {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  TSHMEM_CHECK(check.agree(request));  // every PE the same verdict, disagreeing PEs named
  Launch launch{rt, c};
  return coll_run_blocking(c.call, launch_on, &launch);
}

}  // namespace tshmemi
