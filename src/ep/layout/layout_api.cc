// tshmem_ep_get_dispatch_layout: checks, the kernel, and (outside graph capture) the synchronous value check.
#include "core/buffer.h"
#include "layout/layout.h"

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_get_dispatch_layout(tshmem_ep_buffer_t buffer, const int64_t *topk_idx,
                                                               int64_t num_tokens, int64_t num_topk,
                                                               int64_t num_experts, int32_t *num_tokens_per_rank,
                                                               int32_t *num_tokens_per_rdma_rank,
                                                               int32_t *num_tokens_per_expert, bool *is_token_in_rank,
                                                               cudaStream_t stream) {
  return guarded("tshmem_ep_get_dispatch_layout", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    const Geometry &g = buffer->geo;
    EP_TRY(check_layout_args(g, topk_idx, num_tokens, num_topk, num_experts, num_tokens_per_rank, num_tokens_per_expert,
                             is_token_in_rank));
    if (num_tokens_per_rdma_rank && buffer->num_nodes == 0)
      return fail(TSHMEM_EP_ERR_UNSUPPORTED, "num_tokens_per_rdma_rank: the PEs do not form equal nodes");
    DeviceGuard guard(buffer->device);
    EP_CUDA(launch_layout(topk_idx, num_tokens, static_cast<int>(num_topk), num_experts, g.n_pes, g.pes_per_node,
                          num_tokens_per_rank, num_tokens_per_rdma_rank, num_tokens_per_expert, is_token_in_rank,
                          buffer->err, stream));
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    EP_CUDA(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return kSuccess;  // reported by notify or check_device_errors
    // Waits for the stream. Kept (not cleared): the next notify publishes it, so that every PE refuses to
    // dispatch alike.
    return take_device_error(buffer, stream, false, kBadExpert);
  });
}

}  // extern "C"
