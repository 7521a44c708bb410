// tshmem_ep_notify and tshmem_ep_dispatch: the host side of the notify step (send map and counts, the all-gather,
// the prefix offsets, one synchronisation unless num_worst_tokens is given) and of the data step (size checks,
// then send, wait, receive on the stream).
#include <algorithm>
#include <cstring>

#include "core/buffer.h"
#include "core/rows.h"
#include "dispatch/dispatch.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace tshmem_ep {
namespace {

tshmemx_stream_t as_tshmem(cudaStream_t s) { return reinterpret_cast<tshmemx_stream_t>(s); }

/// Rows each PE receives (sum of column q of the matrix) and each PE sends (sum of row q), from the host mirror.
void totals(const tshmem_ep_handle &h, int64_t *max_recv, int64_t *max_send, int64_t *max_tokens) {
  const int n = h.buffer->geo.n_pes;
  const int64_t w = publish_words(n, h.num_experts);
  *max_recv = *max_send = *max_tokens = 0;
  for (int q = 0; q < n; ++q) {
    int64_t recv = 0, send = 0;
    for (int s = 0; s < n; ++s) {
      recv += h.h_matrix[s * w + q];
      send += h.h_matrix[q * w + s];
    }
    *max_recv = std::max(*max_recv, recv);
    *max_send = std::max(*max_send, send);
    *max_tokens = std::max<int64_t>(*max_tokens, h.h_matrix[q * w + publish_tokens_word(n, h.num_experts)]);
  }
}

}  // namespace

/// The per-PE maxima of the last synchronising notify (combine_api.cc uses them too).
void handle_totals(const tshmem_ep_handle &h, int64_t *max_recv, int64_t *max_send, int64_t *max_tokens) {
  totals(h, max_recv, max_send, max_tokens);
}

}  // namespace tshmem_ep

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_notify(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle,
                                                  const bool *is_token_in_rank, const int32_t *num_tokens_per_expert,
                                                  int64_t num_tokens, int64_t num_experts, int64_t expert_alignment,
                                                  int64_t num_worst_tokens, int64_t *num_recv_tokens,
                                                  int32_t *num_recv_tokens_per_expert, cudaStream_t stream) {
  return guarded("tshmem_ep_notify", [&]() -> Status {
    EP_TRY(check_handle(buffer, handle));
    const Geometry &g = buffer->geo;
    EP_TRY(check_notify_args(g, handle->max_tokens, handle->num_experts, is_token_in_rank, num_tokens_per_expert,
                             num_tokens, num_experts, expert_alignment, num_worst_tokens, num_recv_tokens));
    DeviceGuard guard(buffer->device);
    const int n = g.n_pes;
    const int64_t w = publish_words(n, num_experts);
    const InfoLayout il = info_layout(n, handle->local_experts);
    handle->num_recv = -1;
    handle->num_tokens = -1;  // unusable until this notify succeeds
    handle->num_worst_tokens = num_worst_tokens;
    *num_recv_tokens = -1;
    // The barrier first: every PE has finished reading its matrix and publish row of the last notify.
    int rc = tshmemx_barrier_all_on_stream(as_tshmem(stream));
    if (rc != 0) return tshmem_fail(rc, "tshmemx_barrier_all_on_stream");
    EP_CUDA(launch_count(is_token_in_rank, num_tokens, n, num_tokens_per_expert, num_experts, buffer->err,
                         buffer->publish_row, handle->d_send_index, stream));
    rc = tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, buffer->matrix, buffer->publish_row,
                                     static_cast<size_t>(w) * sizeof(int32_t), as_tshmem(stream));
    if (rc != 0) return tshmem_fail(rc, "tshmemx_allgather_on_stream");
    EP_CUDA(launch_prefix(buffer->matrix, n, g.my_pe, num_experts, expert_alignment, num_worst_tokens, handle->d_matrix,
                          handle->d_info, buffer->err, stream));
    handle->needs_barrier = false;
    if (num_worst_tokens > 0) {
      handle->num_tokens = num_tokens;
      return finish_off_node(buffer, stream);
    }
    EP_CUDA(cudaMemcpyAsync(handle->h_matrix, handle->d_matrix, sizeof(int32_t) * static_cast<size_t>(n * w),
                            cudaMemcpyDeviceToHost, stream));
    EP_CUDA(cudaMemcpyAsync(handle->h_info, handle->d_info, sizeof(int32_t) * static_cast<size_t>(il.words),
                            cudaMemcpyDeviceToHost, stream));
    EP_CUDA(cudaStreamSynchronize(stream));
    const int32_t bad = handle->h_info[il.status];
    if (bad != 0) {
      // Every PE sees the same flags, so every PE fails here; the PE that holds the bad entry says which.
      const Status mine = take_device_error(buffer, stream, true, kBadExpert);
      if (mine != kSuccess) return mine;
      return fail(TSHMEM_EP_ERR_INVALID_VALUE,
                  "PE %d found an expert id outside [-1, num_experts = %lld) in its topk_idx (its own error names "
                  "the value and position); no PE dispatches",
                  bad - 1, static_cast<long long>(num_experts));
    }
    handle->num_tokens = num_tokens;
    handle->num_recv = handle->h_info[0];
    *num_recv_tokens = handle->num_recv;
    if (num_recv_tokens_per_expert)
      std::memcpy(num_recv_tokens_per_expert, handle->h_info + 1,
                  sizeof(int32_t) * static_cast<size_t>(handle->local_experts));
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_dispatch(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle, const void *x,
                                                    tshmem_ep_dtype_t x_dtype, const float *x_scales,
                                                    int64_t num_tokens, int64_t hidden, const int64_t *topk_idx,
                                                    const float *topk_weights, int64_t num_topk, void *recv_x,
                                                    float *recv_x_scales, int64_t *recv_topk_idx,
                                                    float *recv_topk_weights, int32_t *recv_src_idx,
                                                    int64_t recv_capacity, cudaStream_t stream) {
  return guarded("tshmem_ep_dispatch", [&]() -> Status {
    EP_TRY(check_handle(buffer, handle));
    if (handle->num_tokens < 0)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "handle = %p; no notify has filled it yet",
                  static_cast<const void *>(handle));
    const Geometry &g = buffer->geo;
    EP_TRY(check_dispatch_args(g, handle->num_tokens, x, x_dtype, x_scales, num_tokens, hidden, topk_idx, topk_weights,
                               num_topk, recv_x, recv_x_scales, recv_capacity));
    const bool fp8 = x_dtype == TSHMEM_EP_FLOAT8_E4M3;
    const DispatchRow row = dispatch_row(hidden, fp8 ? 1 : 2, fp8, num_topk);
    // What the buffer must hold: known exactly for every PE after a synchronising notify (so every PE decides
    // alike), bounded by num_worst_tokens otherwise (and guarded on the device).
    int64_t max_recv = 0, max_send = 0, max_tokens = num_tokens;
    if (handle->num_recv >= 0) {
      handle_totals(*handle, &max_recv, &max_send, &max_tokens);
      EP_TRY(check_recv_capacity(recv_capacity, handle->num_recv, "the dispatch"));
    } else {
      max_recv = handle->num_worst_tokens;
      EP_TRY(check_recv_capacity(recv_capacity, handle->num_worst_tokens, "num_worst_tokens"));
    }
    EP_TRY(check_fits("num_nvl_bytes", g.nvl_bytes, max_recv, row.stride, "the dispatch's largest receiver"));
    if (g.spans_nodes)
      EP_TRY(check_fits("num_rdma_bytes", g.rdma_bytes, max_tokens, row.stride, "staging the rows for other nodes"));
    DeviceGuard guard(buffer->device);
    if (handle->needs_barrier) {
      const int rc = tshmemx_barrier_all_on_stream(reinterpret_cast<tshmemx_stream_t>(stream));
      if (rc != 0) return tshmem_fail(rc, "tshmemx_barrier_all_on_stream");
    }
    handle->needs_barrier = true;
    DispatchParams p{};
    p.x = static_cast<const char *>(x);
    p.scales = x_scales;
    p.topk_idx = topk_idx;
    p.topk_weights = topk_weights;
    p.num_tokens = num_tokens;
    p.n_pes = g.n_pes;
    p.my_pe = g.my_pe;
    p.local_experts = handle->local_experts;
    p.row = row;
    p.send_index = handle->d_send_index;
    p.send_counts = handle->d_matrix + static_cast<int64_t>(g.my_pe) * publish_words(g.n_pes, handle->num_experts);
    p.info = handle->d_info;
    p.il = info_layout(g.n_pes, handle->local_experts);
    p.recv_area = buffer->recv_area;
    p.area_rows = static_cast<int64_t>(g.nvl_bytes / row.stride);
    p.staging = g.spans_nodes ? buffer->staging : nullptr;
    p.staging_rows = static_cast<int64_t>(g.rdma_bytes / row.stride);
    p.sig = buffer->dispatch_sig;
    p.counter = buffer->counters;
    p.err = buffer->err;
    p.recv_x = static_cast<char *>(recv_x);
    p.recv_scales = recv_x_scales;
    // num_topk, not the pointers, says whether the entries travel: a PE without tokens may pass NULL for them.
    p.recv_topk_idx = num_topk > 0 ? recv_topk_idx : nullptr;
    p.recv_topk_weights = num_topk > 0 ? recv_topk_weights : nullptr;
    p.recv_src_idx = recv_src_idx;
    p.recv_capacity = recv_capacity;
    const int blocks = data_blocks(*buffer);
    EP_CUDA(launch_dispatch_send(p, blocks, stream));
    EP_CUDA(launch_wait_signals(buffer->dispatch_sig, g.n_pes, g.my_pe, buffer->timeout_ms, 0, stream));
    EP_CUDA(launch_dispatch_recv(p, blocks, stream));
    return finish_off_node(buffer, stream);
  });
}

}  // extern "C"
