// tshmem_ep_combine: size checks, then on the stream a barrier (every PE has finished reading its receive area),
// the send kernel, the wait for every PE's signal, the reduction.
#include "combine/combine.h"
#include "core/buffer.h"
#include "core/rows.h"
#include "dispatch/dispatch.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_combine(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle, const void *x,
                                                   tshmem_ep_dtype_t x_dtype, int64_t num_rows, int64_t hidden,
                                                   const float *topk_weights, int64_t num_topk, const void *bias0,
                                                   const void *bias1, void *combined_x, float *combined_topk_weights,
                                                   cudaStream_t stream) {
  return guarded("tshmem_ep_combine", [&]() -> Status {
    EP_TRY(check_handle(buffer, handle));
    if (handle->num_tokens < 0)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = %p; no notify has filled it yet",
                  static_cast<const void *>(handle));
    const Geometry &g = buffer->geo;
    EP_TRY(check_combine_args(g, x, x_dtype, num_rows, hidden, topk_weights, num_topk, combined_topk_weights,
                              combined_x, bias0, bias1, handle->num_tokens));
    const CombineRow row = combine_row(hidden, num_topk);
    int64_t max_recv = 0, max_send = 0, max_tokens = 0;
    if (handle->num_recv >= 0) {
      handle_totals(*handle, &max_recv, &max_send, &max_tokens);
      if (num_rows < handle->num_recv)
        return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_rows = %lld; the dispatch received %lld rows here",
                    static_cast<long long>(num_rows), static_cast<long long>(handle->num_recv));
      EP_TRY(check_fits("num_nvl_bytes", g.nvl_bytes, max_send, row.stride, "the combine's largest home PE"));
    } else {
      max_recv = handle->num_worst_tokens;
      if (num_rows < handle->num_worst_tokens)
        return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_rows = %lld; the worst-case dispatch had %lld rows",
                    static_cast<long long>(num_rows), static_cast<long long>(handle->num_worst_tokens));
    }
    if (g.spans_nodes)
      EP_TRY(
          check_fits("num_rdma_bytes", g.rdma_bytes, max_recv, row.stride, "staging the rows returned to other nodes"));
    DeviceGuard guard(buffer->device);
    const int rc = tshmemx_barrier_all_on_stream(reinterpret_cast<tshmemx_stream_t>(stream));
    if (rc != 0) return tshmem_fail(rc, "tshmemx_barrier_all_on_stream");
    handle->needs_barrier = true;
    CombineParams p{};
    p.x = static_cast<const char *>(x);
    p.num_rows = num_rows;
    p.topk_weights = topk_weights;
    p.num_topk = static_cast<int>(num_topk);
    p.hidden = hidden;
    p.row = row;
    p.n_pes = g.n_pes;
    p.my_pe = g.my_pe;
    p.info = handle->d_info;
    p.il = info_layout(g.n_pes, handle->local_experts);
    p.send_index = handle->d_send_index;
    p.num_tokens = handle->num_tokens;
    p.area = buffer->recv_area;
    p.area_rows = static_cast<int64_t>(g.nvl_bytes / row.stride);
    p.staging = g.spans_nodes ? buffer->staging : nullptr;
    p.staging_rows = static_cast<int64_t>(g.rdma_bytes / row.stride);
    p.sig = buffer->combine_sig;
    p.counter = buffer->counters + 1;
    p.err = buffer->err;
    p.bias0 = static_cast<const uint16_t *>(bias0);
    p.bias1 = static_cast<const uint16_t *>(bias1);
    p.out = static_cast<char *>(combined_x);
    p.out_weights = combined_topk_weights;
    const int blocks = data_blocks(*buffer);
    EP_CUDA(launch_combine_send(p, blocks, stream));
    EP_CUDA(launch_wait_signals(buffer->combine_sig, g.n_pes, g.my_pe, buffer->timeout_ms, 1, stream));
    EP_CUDA(launch_combine_reduce(p, blocks, stream));
    return finish_off_node(buffer, stream);
  });
}

}  // extern "C"
