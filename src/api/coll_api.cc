// The collectives' C entry points: the on-stream forms (tshmemx_*_on_stream), the host-blocking forms
// (tshmemi_host_*, tshmem_barrier) and the library's half of the cooperative launch. Each takes the live context and
// hands the collectives what they read of it (coll/coll_on_stream.h, coll/coll_host.h).
#include "coll/coll_host.h"
#include "coll/coll_on_stream.h"
#include "context.h"
#include "tshmem/tshmem.h"

namespace tshmemi {
namespace {

CollRuntime runtime_of(Context &ctx) {
  return CollRuntime{*ctx.mem,
                     *ctx.heap,
                     ctx.teams,
                     ctx.peers.my_pe(),
                     ctx.boot->size(),
                     ctx.coll_early_launch,
                     ctx.proxy != nullptr,
                     ctx.offnode_reason,
                     ctx.peers.bases(),
                     *ctx.boot};
}

/// An on-stream form behind the exception fence: `body` runs with the live context's runtime.
template <typename Body>
int on_stream(const char *call, Body body) {
  return guarded_status(call, [&]() -> Status {
    ContextRef ctx = require_context(call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    return body(runtime_of(*ctx));
  });
}

/// A host-blocking form behind the exception fence.
int entry(const HostCollective &c) {
  return guarded_status(c.call, [&]() -> Status {
    ContextRef ctx = require_context(c.call);
    if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
    return host_collective(runtime_of(*ctx), *ctx->check, *ctx->rendezvous, *ctx->host_coll, c);
  });
}

}  // namespace
}  // namespace tshmemi

using namespace tshmemi;

extern "C" {

TSHMEM_API int tshmemx_allreduce_on_stream(tshmem_team_t team, void *dst, const void *src, size_t count,
                                           tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream) {
  return on_stream("tshmemx_allreduce_on_stream", [&](const CollRuntime &rt) {
    return coll_allreduce(rt, "tshmemx_allreduce_on_stream", team, dst, src, count, dtype, op, stream, false);
  });
}

TSHMEM_API int tshmemx_reduce_scatter_on_stream(tshmem_team_t team, void *dst, const void *src, size_t count,
                                                tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream) {
  return on_stream("tshmemx_reduce_scatter_on_stream", [&](const CollRuntime &rt) {
    return coll_reduce_scatter(rt, "tshmemx_reduce_scatter_on_stream", team, dst, src, count, dtype, op, stream);
  });
}

TSHMEM_API int tshmemx_allgather_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                           tshmemx_stream_t stream) {
  return on_stream("tshmemx_allgather_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kFcollect, "tshmemx_allgather_on_stream", team, dst, src, nbytes, 0, stream, false);
  });
}

TSHMEM_API int tshmemx_alltoall_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                          tshmemx_stream_t stream) {
  return on_stream("tshmemx_alltoall_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kAlltoall, "tshmemx_alltoall_on_stream", team, dst, src, nbytes, 0, stream, false);
  });
}

TSHMEM_API int tshmemx_broadcast_on_stream(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root,
                                           tshmemx_stream_t stream) {
  return on_stream("tshmemx_broadcast_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kBroadcast, "tshmemx_broadcast_on_stream", team, dst, src, nbytes, root, stream,
                     false);
  });
}

TSHMEM_API int tshmemx_barrier_on_stream(tshmem_team_t team, tshmemx_stream_t stream) {
  return on_stream("tshmemx_barrier_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kBarrier, "tshmemx_barrier_on_stream", team, nullptr, nullptr, 0, 0, stream, false);
  });
}

TSHMEM_API int tshmemx_barrier_all_on_stream(tshmemx_stream_t stream) {
  return on_stream("tshmemx_barrier_all_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kBarrier, "tshmemx_barrier_all_on_stream", TSHMEM_TEAM_WORLD, nullptr, nullptr, 0, 0,
                     stream, false);
  });
}

TSHMEM_API int tshmemx_sync_all_on_stream(tshmemx_stream_t stream) {
  return on_stream("tshmemx_sync_all_on_stream", [&](const CollRuntime &rt) {
    return coll_move(rt, CollKind::kBarrier, "tshmemx_sync_all_on_stream", TSHMEM_TEAM_WORLD, nullptr, nullptr, 0, 0,
                     stream, false);
  });
}

TSHMEM_API int tshmemi_host_reduce(tshmem_team_t team, void *dst, const void *src, size_t count, tshmemx_dtype_t dtype,
                                   tshmemx_redop_t op) {
  return entry({HostKind::kReduce, reduce_call_name(dtype, op), team, dst, src, count, dtype, op});
}

TSHMEM_API int tshmemi_host_reduce_scatter(tshmem_team_t team, void *dst, const void *src, size_t count,
                                           tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  return entry({HostKind::kReduceScatter, reduce_scatter_call_name(dtype, op), team, dst, src, count, dtype, op});
}

// The moves are named after OpenSHMEM 1.5's byte forms (shmem_fcollectmem & co.): the count is in bytes.
TSHMEM_API int tshmemi_host_fcollect(tshmem_team_t team, void *dst, const void *src, size_t nbytes) {
  return entry({HostKind::kFcollect, "tshmem_fcollectmem", team, dst, src, nbytes});
}

TSHMEM_API int tshmemi_host_alltoall(tshmem_team_t team, void *dst, const void *src, size_t nbytes) {
  return entry({HostKind::kAlltoall, "tshmem_alltoallmem", team, dst, src, nbytes});
}

TSHMEM_API int tshmemi_host_broadcast(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root) {
  HostCollective c{HostKind::kBroadcast, "tshmem_broadcastmem", team, dst, src, nbytes};
  c.root = root;
  return entry(c);
}

// Exported under its OpenSHMEM name for C units; CUDA units reach it as tshmemi_host_barrier (host_device_names.cc).
TSHMEM_API int tshmem_barrier(tshmem_team_t team) { return entry({HostKind::kTeamBarrier, "tshmem_barrier", team}); }

// The library's half of tshmemx_collective_launch (tshmem/tshmemx_launch.h, which needs the CUDA headers).
TSHMEM_API int tshmemi_collective_launch_check(const char *call, long long grid_blocks, unsigned block_threads,
                                               size_t shared_mem, int cuda_rc, const char *cuda_what,
                                               const char *cuda_msg, int blocks_per_sm, int sm_count, int device);
TSHMEM_API int tshmemi_collective_launch_check(const char *call, long long grid_blocks, unsigned block_threads,
                                               size_t shared_mem, int cuda_rc, const char *cuda_what,
                                               const char *cuda_msg, int blocks_per_sm, int sm_count, int device) {
  if (call == nullptr) call = "tshmemx_collective_launch";
  if (!require_context(call)) return TSHMEM_ERR_NOT_INITIALIZED;
  return check_cooperative_launch(call, grid_blocks, block_threads, shared_mem, cuda_rc, cuda_what, cuda_msg,
                                  blocks_per_sm, sm_count, device);
}

}  // extern "C"
