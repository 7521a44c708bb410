// coll_on_stream.h and coll_launch.h for builds without CUDA: the collectives are GPU kernels, so every call fails
// clearly (the C entry points exist all the same: a program links the same way against either build).
#include "coll/coll_launch.h"
#include "coll/coll_on_stream.h"

namespace tshmemi {
namespace {

Status unavailable(const char *call) {
  return set_error(TSHMEM_ERR_CONFIG, "%s: collectives run on the GPU: this build of tshmem has no CUDA", call);
}

}  // namespace

Status coll_allreduce(const CollRuntime &, const char *call, tshmem_team_t, void *, const void *, size_t,
                      tshmemx_dtype_t, tshmemx_redop_t, tshmemx_stream_t, bool) {
  return unavailable(call);
}
Status coll_reduce_scatter(const CollRuntime &, const char *call, tshmem_team_t, void *, const void *, size_t,
                           tshmemx_dtype_t, tshmemx_redop_t, tshmemx_stream_t) {
  return unavailable(call);
}
Status coll_move(const CollRuntime &, CollKind, const char *call, tshmem_team_t, void *, const void *, size_t, int,
                 tshmemx_stream_t, bool) {
  return unavailable(call);
}
Status coll_run_blocking(const char *call, Status (*)(void *, tshmemx_stream_t), void *) { return unavailable(call); }
Status check_cooperative_launch(const char *call, long long, unsigned, size_t, int, const char *, const char *, int,
                                int, int) {
  return unavailable(call);
}

}  // namespace tshmemi
