// The library's half of the cooperative launch (tshmem/tshmemx_launch.h): the caller's CUDA runtime measures
// and launches, this file decides and words every refusal, so messages have one home.
#include "coll/coll_on_stream.h"

namespace tshmemi {

Status check_cooperative_launch(const char *call, long long grid_blocks, unsigned block_threads, size_t shared_mem,
                                int cuda_rc, const char *cuda_what, const char *cuda_msg, int blocks_per_sm,
                                int sm_count, int device) {
  if (cuda_rc != 0)
    return set_error(TSHMEM_ERR_CUDA, "%s: %s failed on device %d: %s (CUDA error %d)", call,
                     cuda_what ? cuda_what : "a CUDA call", device, cuda_msg ? cuda_msg : "?", cuda_rc);
  if (grid_blocks < 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: the result pointer is NULL", call);
  if (block_threads == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: block of 0 threads", call);
  const long long fit = static_cast<long long>(blocks_per_sm) * sm_count;
  if (grid_blocks > fit)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: a grid of %lld blocks cannot be co-resident on device %d: at most %lld blocks of %u "
                     "threads with %zu bytes of dynamic shared memory fit at once (%d per SM x %d SMs); a "
                     "cooperative grid must fit, or its grid-wide barriers would deadlock",
                     call, grid_blocks, device, fit, block_threads, shared_mem, blocks_per_sm, sm_count);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
