// Host-blocking collectives (tshmemi_host_reduce/fcollect/alltoall/broadcast, tshmem_barrier): the on-stream
// collective's own checks, one checked rendezvous (the collective check, so PEs whose calls differ are named
// on every PE and nothing is launched anywhere), then the on-stream kernel on tshmem's internal stream, waited for.
#include <mutex>

#include "coll/coll_launch.h"
#include "coll/team.h"
#include "context.h"
#include "tshmem/tshmem.h"

namespace tshmemi {
namespace {

/// The host-blocking calls.
enum class HostKind { kReduce, kFcollect, kAlltoall, kBroadcast, kTeamBarrier };

/// One host-blocking call: kind, arguments, and the caller's name for messages.
struct HostCollective {
  HostKind kind = HostKind::kTeamBarrier;
  const char *call = "";
  tshmem_team_t team = TSHMEM_TEAM_WORLD;
  void *dst = nullptr;
  const void *src = nullptr;
  size_t count = 0;  ///< elements (reduce) or bytes (moves)
  tshmemx_dtype_t dtype = TSHMEMX_DTYPE_FLOAT;
  tshmemx_redop_t op = TSHMEMX_OP_SUM;
  int root = 0;
};

/// The on-stream collective behind `c`: its checks only, or checks and launch on `stream`.
Status run(const HostCollective &c, tshmemx_stream_t stream, bool check_only) {
  if (c.kind == HostKind::kReduce)
    return coll_allreduce(c.call, c.team, c.dst, c.src, c.count, c.dtype, c.op, stream, check_only);
  if (c.kind == HostKind::kFcollect)
    return coll_move(CollKind::kFcollect, c.call, c.team, c.dst, c.src, c.count, 0, stream, check_only);
  if (c.kind == HostKind::kAlltoall)
    return coll_move(CollKind::kAlltoall, c.call, c.team, c.dst, c.src, c.count, 0, stream, check_only);
  if (c.kind == HostKind::kBroadcast)
    return coll_move(CollKind::kBroadcast, c.call, c.team, c.dst, c.src, c.count, c.root, stream, check_only);
  return set_error(TSHMEM_ERR_INTERNAL, "%s: no kernel for this collective", c.call);
}

Status launch_on(void *arg, tshmemx_stream_t stream) {
  return run(*static_cast<const HostCollective *>(arg), stream, false);
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

Status host_collective(const HostCollective &c) {
  // Under TSHMEM_THREAD_MULTIPLE one host-blocking collective of this PE runs at a time, from its rendezvous to
  // the end of its kernel: two threads' kernels must not reach the device in the other order than their
  // rendezvous (the kernels' call counters pair calls across PEs by order).
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> serial(one_at_a_time);
  {
    ContextRef ctx = require_context(c.call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    // The rendezvous is job-wide: a team without every PE would leave its members waiting for PEs that never
    // call. Refused on each caller alike (the team is the same on every member), before any waiting. An
    // unknown team is a local failure that still joins the rendezvous (the others may have passed a good one).
    TeamInfo info;
    if (ctx->teams.lookup(c.team, c.call, &info) == TSHMEM_SUCCESS && info.size != ctx->boot->size())
      return set_error(TSHMEM_ERR_INVALID_ARG,
                       "%s: team %d has %d of the job's %d PEs: the host-blocking collectives rendezvous job-wide "
                       "(the symmetry check), so their team must hold every PE; use the on-stream form "
                       "(tshmemx_..._on_stream) or the device forms for a smaller team",
                       c.call, static_cast<int>(c.team), info.size, ctx->boot->size());
  }
  CollectiveRequest request(c.call);
  {
    ContextRef ctx = require_context(c.call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    request = describe(*ctx->heap, c);
    if (c.kind == HostKind::kTeamBarrier) {
      // A team of every PE: quiet and the checked rendezvous are the barrier, on every backend (no kernel).
      TeamInfo info;
      const Status known = ctx->teams.lookup(c.team, c.call, &info);
      if (known != TSHMEM_SUCCESS) {
        request.local_status = known;
        request.local_error = last_error_message();
      }
      return ctx->rendezvous->barrier(request);
    }
  }
  // The local verdict: the on-stream call's checks (they take the context themselves).
  const Status local = run(c, nullptr, true);
  if (local != TSHMEM_SUCCESS) {
    request.local_status = local;
    request.local_error = last_error_message();
  }
  {
    ContextRef ctx = require_context(c.call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    TSHMEM_CHECK(ctx->check->agree(request));  // every PE the same verdict, disagreeing PEs named
  }
  return coll_run_blocking(c.call, launch_on, const_cast<HostCollective *>(&c));
}

/// A C entry point's collective, behind the exception fence.
int entry(const HostCollective &c) {
  return guarded_status(c.call, [&] { return host_collective(c); });
}

}  // namespace
}  // namespace tshmemi

using namespace tshmemi;

extern "C" {

TSHMEM_API int tshmemi_host_reduce(tshmem_team_t team, void *dst, const void *src, size_t count, tshmemx_dtype_t dtype,
                                   tshmemx_redop_t op) {
  return entry({HostKind::kReduce, "tshmem_<T>_<op>_reduce", team, dst, src, count, dtype, op});
}

TSHMEM_API int tshmemi_host_fcollect(tshmem_team_t team, void *dst, const void *src, size_t nbytes) {
  return entry({HostKind::kFcollect, "tshmem_<T>_fcollect", team, dst, src, nbytes});
}

TSHMEM_API int tshmemi_host_alltoall(tshmem_team_t team, void *dst, const void *src, size_t nbytes) {
  return entry({HostKind::kAlltoall, "tshmem_<T>_alltoall", team, dst, src, nbytes});
}

TSHMEM_API int tshmemi_host_broadcast(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root) {
  HostCollective c{HostKind::kBroadcast, "tshmem_<T>_broadcast", team, dst, src, nbytes};
  c.root = root;
  return entry(c);
}

// Exported under its OpenSHMEM name for C units; CUDA units reach it as tshmemi_host_barrier (host_device_names.cc).
TSHMEM_API int tshmem_barrier(tshmem_team_t team) { return entry({HostKind::kTeamBarrier, "tshmem_barrier", team}); }

}  // extern "C"
