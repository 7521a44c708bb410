// The on-stream collectives of tshmemx.h for builds without CUDA: the symbols exist (a program links the
// same way against either build) and every call fails clearly; the collectives are GPU kernels.
#include "coll/coll_launch.h"
#include "context.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {
namespace {

int unavailable(const char *call) {
  if (!require_context(call)) return TSHMEM_ERR_NOT_INITIALIZED;
  return set_error(TSHMEM_ERR_CONFIG, "%s: collectives run on the GPU: this build of tshmem has no CUDA", call);
}

}  // namespace

Status coll_allreduce(const char *call, tshmem_team_t, void *, const void *, size_t, tshmemx_dtype_t, tshmemx_redop_t,
                      tshmemx_stream_t, bool) {
  return static_cast<Status>(unavailable(call));
}
Status coll_move(CollKind, const char *call, tshmem_team_t, void *, const void *, size_t, int, tshmemx_stream_t, bool) {
  return static_cast<Status>(unavailable(call));
}
Status coll_run_blocking(const char *call, Status (*)(void *, tshmemx_stream_t), void *) {
  return static_cast<Status>(unavailable(call));
}

}  // namespace tshmemi

using tshmemi::unavailable;

extern "C" {

TSHMEM_API int tshmemx_allreduce_on_stream(tshmem_team_t, void *, const void *, size_t, tshmemx_dtype_t,
                                           tshmemx_redop_t, tshmemx_stream_t) {
  return unavailable("tshmemx_allreduce_on_stream");
}
TSHMEM_API int tshmemx_reduce_scatter_on_stream(tshmem_team_t, void *, const void *, size_t, tshmemx_dtype_t,
                                                tshmemx_redop_t, tshmemx_stream_t) {
  return unavailable("tshmemx_reduce_scatter_on_stream");
}
TSHMEM_API int tshmemx_allgather_on_stream(tshmem_team_t, void *, const void *, size_t, tshmemx_stream_t) {
  return unavailable("tshmemx_allgather_on_stream");
}
TSHMEM_API int tshmemx_alltoall_on_stream(tshmem_team_t, void *, const void *, size_t, tshmemx_stream_t) {
  return unavailable("tshmemx_alltoall_on_stream");
}
TSHMEM_API int tshmemx_broadcast_on_stream(tshmem_team_t, void *, const void *, size_t, int, tshmemx_stream_t) {
  return unavailable("tshmemx_broadcast_on_stream");
}
TSHMEM_API int tshmemx_barrier_on_stream(tshmem_team_t, tshmemx_stream_t) {
  return unavailable("tshmemx_barrier_on_stream");
}
// The library's half of tshmemx_collective_launch (tshmem/tshmemx_launch.h, which needs the CUDA headers).
TSHMEM_API int tshmemi_collective_launch_check(const char *call, long long, unsigned, size_t, int, const char *,
                                               const char *, int, int, int);
TSHMEM_API int tshmemi_collective_launch_check(const char *call, long long, unsigned, size_t, int, const char *,
                                               const char *, int, int, int) {
  return unavailable(call != nullptr ? call : "tshmemx_collective_launch");
}
TSHMEM_API int tshmemx_barrier_all_on_stream(tshmemx_stream_t) { return unavailable("tshmemx_barrier_all_on_stream"); }
TSHMEM_API int tshmemx_sync_all_on_stream(tshmemx_stream_t) { return unavailable("tshmemx_sync_all_on_stream"); }

}  // extern "C"
