// The C calls of low-latency mode (include/tshmem/ep.h; low_latency/ll.h): argument rules on the host, then the
// kernels on the caller's stream. Nothing here waits for the device, so every call can be captured in a CUDA graph.
#include <algorithm>

#include "core/buffer.h"
#include "low_latency/ll.h"

using namespace tshmem_ep;

namespace {

struct Slot {
  char *base;
  uint64_t *counts;
  uint64_t *flags;
  char *send;
  char *recv;
};

Slot slot_of(const tshmem_ep_buffer *b, const LlLayout &l, int s) {
  Slot r;
  r.base = b->staging + static_cast<size_t>(s) * l.slot_bytes;
  r.counts = reinterpret_cast<uint64_t *>(r.base + l.count_off);
  r.flags = reinterpret_cast<uint64_t *>(r.base + l.flag_off);
  r.send = r.base + l.send_off;
  r.recv = r.base + l.recv_off;
  return r;
}

/// The slot of this call: a call with a send phase takes the next one (and reports it); a receive-only call names
/// the one its send used.
Status take_slot(tshmem_ep_buffer *b, int phases, int *slot, int *s) {
  if (phases & TSHMEM_EP_LL_SEND) {
    *s = b->ll_slot;
    b->ll_slot ^= 1;
    if (slot) *slot = *s;
    return kSuccess;
  }
  if (!slot) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "slot = NULL; a receive-only call needs its send's slot");
  if (*slot != 0 && *slot != 1)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "*slot = %d; must be 0 or 1 (what the send phase reported)", *slot);
  *s = *slot;
  return kSuccess;
}

int ll_blocks(const tshmem_ep_buffer &b) { return b.num_blocks > 0 ? b.num_blocks : b.sm_count; }

/// The slots' layout for this shape, once the shape is valid and its slots fit the buffer.
Status checked_layout(const tshmem_ep_buffer *b, int64_t max_tokens, int64_t hidden, int64_t num_experts, LlLayout *l) {
  EP_TRY(check_ll_shape(b->geo, max_tokens, hidden, num_experts));
  *l = ll_layout(b->geo.n_pes, max_tokens, hidden, num_experts);
  return check_ll_fits(b->geo, *l);
}

Status check_ll_args(const Geometry &g, const tshmem_ep_ll_dispatch_args_t *a, int phases) {
  return check_ll_dispatch_args(g, a, phases);
}
Status check_ll_args(const Geometry &g, const tshmem_ep_ll_combine_args_t *a, int phases) {
  return check_ll_combine_args(g, a, phases);
}

/// What a dispatch or combine works with: its layout, its slot and the other one (which it cleans for the next call).
struct LlCall {
  LlLayout layout;
  Slot cur, next;
};

/// The start of a dispatch or combine: the buffer and the arguments checked, the layout, the slot taken, and the
/// kernel parameters both share filled in `p`.
template <class Args, class Params>
Status start_ll_call(tshmem_ep_buffer *buffer, const Args *a, int phases, int *slot, LlCall *call, Params *p) {
  EP_TRY(check_buffer(buffer));
  EP_TRY(check_ll_args(buffer->geo, a, phases));
  EP_TRY(checked_layout(buffer, a->num_max_dispatch_tokens_per_rank, a->hidden, a->num_experts, &call->layout));
  int s = 0;
  EP_TRY(take_slot(buffer, phases, slot, &s));
  call->cur = slot_of(buffer, call->layout, s);
  call->next = slot_of(buffer, call->layout, s ^ 1);
  p->num_tokens = static_cast<int>(a->num_tokens);
  p->num_topk = static_cast<int>(a->num_topk);
  p->hidden = static_cast<int>(a->hidden);
  p->max_tokens = static_cast<int>(a->num_max_dispatch_tokens_per_rank);
  p->num_experts = static_cast<int>(a->num_experts);
  p->local_experts = static_cast<int>(call->layout.local_experts);
  p->n_pes = buffer->geo.n_pes;
  p->my_pe = buffer->geo.my_pe;
  p->send = call->cur.send;
  p->recv = call->cur.recv;
  p->next_clean_words = p->num_experts;  // L * N counts or flags
  p->mask = buffer->ll_mask;
  p->err = buffer->err;
  p->timeout_ms = buffer->timeout_ms;
  return kSuccess;
}

}  // namespace

extern "C" {

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_dispatch(tshmem_ep_buffer_t buffer,
                                                                const tshmem_ep_ll_dispatch_args_t *a, int phases,
                                                                int *slot, cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_dispatch", [&]() -> Status {
    LlCall call{};
    LlDispatchParams p{};
    EP_TRY(start_ll_call(buffer, a, phases, slot, &call, &p));
    DeviceGuard guard(buffer->device);
    p.x = static_cast<const uint16_t *>(a->x);
    p.topk_idx = a->topk_idx;
    p.fp8 = a->use_fp8 != 0;
    p.round_scale = a->round_scale != 0;
    p.ue8m0 = a->use_ue8m0 != 0;
    p.msg_bytes = ll_msg_bytes(a->hidden, p.fp8);
    p.counts = call.cur.counts;
    p.next_clean = call.next.flags;
    p.counter = buffer->ll_counter;
    p.recv_x = a->packed_recv_x;
    p.recv_scales = a->packed_recv_x_scales;
    p.recv_count = a->packed_recv_count;
    p.recv_src_info = a->packed_recv_src_info;
    p.recv_layout_range = a->packed_recv_layout_range;
    p.cum_stats = a->cumulative_local_expert_recv_stats;
    p.wait_stats = a->dispatch_wait_recv_cost_stats;
    const int blocks = ll_blocks(*buffer);
    EP_CUDA(launch_ll_dispatch(p, phases, blocks, buffer->sm_count, stream));
    // Across nodes the call returns when its kernels are done (outside graph capture), as normal mode's do: a later
    // CUDA call that waits while holding the driver's lock would hold the off-node proxy's copies (docs/ep.md).
    return finish_off_node(buffer, stream);
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_combine(tshmem_ep_buffer_t buffer,
                                                               const tshmem_ep_ll_combine_args_t *a, int phases,
                                                               int *slot, cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_combine", [&]() -> Status {
    LlCall call{};
    LlCombineParams p{};
    EP_TRY(start_ll_call(buffer, a, phases, slot, &call, &p));
    DeviceGuard guard(buffer->device);
    p.x = a->zero_copy ? reinterpret_cast<const uint16_t *>(call.cur.send) : static_cast<const uint16_t *>(a->x);
    p.topk_idx = a->topk_idx;
    p.topk_weights = a->topk_weights;
    p.src_info = a->src_info;
    p.layout_range = a->layout_range;
    p.zero_copy = a->zero_copy != 0;
    p.flags = call.cur.flags;
    p.next_clean = call.next.counts;
    p.combined_x = static_cast<uint16_t *>(a->combined_x);
    p.wait_stats = a->combine_wait_recv_cost_stats;
    const int blocks = ll_blocks(*buffer);
    EP_CUDA(launch_ll_combine(p, phases, blocks, buffer->sm_count, stream));
    return finish_off_node(buffer, stream);
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_next_combine_buffer(tshmem_ep_buffer_t buffer,
                                                                           int64_t num_max_dispatch_tokens_per_rank,
                                                                           int64_t hidden, int64_t num_experts,
                                                                           void **ptr) {
  return guarded("tshmem_ep_low_latency_next_combine_buffer", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (!ptr) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "ptr = NULL; it is required");
    LlLayout l{};
    EP_TRY(checked_layout(buffer, num_max_dispatch_tokens_per_rank, hidden, num_experts, &l));
    *ptr = slot_of(buffer, l, buffer->ll_slot).send;
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_clean(tshmem_ep_buffer_t buffer,
                                                             int64_t num_max_dispatch_tokens_per_rank, int64_t hidden,
                                                             int64_t num_experts, cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_clean", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    LlLayout l{};
    EP_TRY(checked_layout(buffer, num_max_dispatch_tokens_per_rank, hidden, num_experts, &l));
    DeviceGuard guard(buffer->device);
    // One kernel: a barrier with every PE this PE does not mask (every PE is done with what came before: normal-mode
    // rows in the same bytes, or low-latency calls), both slots' signals zeroed, the barrier again (every PE's
    // signals are zero before anyone sends). A masked PE is neither signalled nor waited for, as in DeepEP; one not
    // masked that does not come is masked at the buffer's bound.
    LlCleanParams p{};
    p.zero[0] = reinterpret_cast<uint64_t *>(slot_of(buffer, l, 0).base);
    p.zero[1] = reinterpret_cast<uint64_t *>(slot_of(buffer, l, 1).base);
    p.zero_words = l.signal_bytes / sizeof(uint64_t);
    p.arrive = buffer->ll_arrive;
    p.count = buffer->ll_count;
    p.mask = buffer->ll_mask;
    p.err = buffer->err;
    p.timeout_ms = buffer->timeout_ms;
    p.n_pes = buffer->geo.n_pes;
    p.my_pe = buffer->geo.my_pe;
    EP_CUDA(launch_ll_clean(p, stream));
    // Every PE that cleaned starts again from slot 0 (one that had made a send-only or receive-only call alone is
    // in step again).
    buffer->ll_slot = 0;
    // Across nodes the barriers wait on the off-node proxy: the call returns when they are done, as dispatch and
    // combine do, so the caller's next CUDA call (a pageable copy, a cudaFree) cannot hold the proxy meanwhile.
    return finish_off_node(buffer, stream);
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_update_mask(tshmem_ep_buffer_t buffer, int pe, int mask,
                                                                   cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_update_mask", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (pe < 0 || pe >= buffer->geo.n_pes)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "pe = %d; must be in [0, n_pes = %d)", pe, buffer->geo.n_pes);
    DeviceGuard guard(buffer->device);
    EP_CUDA(launch_ll_update_mask(buffer->ll_mask, pe, mask ? 1 : 0, buffer->geo.n_pes, stream));
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_query_mask(tshmem_ep_buffer_t buffer, int32_t *mask_status,
                                                                  cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_query_mask", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    if (!mask_status) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "mask_status = NULL; it is required");
    DeviceGuard guard(buffer->device);
    EP_CUDA(cudaMemcpyAsync(mask_status, buffer->ll_mask, static_cast<size_t>(buffer->geo.n_pes) * sizeof(int32_t),
                            cudaMemcpyDeviceToDevice, stream));
    return kSuccess;
  });
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_clean_mask(tshmem_ep_buffer_t buffer, cudaStream_t stream) {
  return guarded("tshmem_ep_low_latency_clean_mask", [&]() -> Status {
    EP_TRY(check_buffer(buffer));
    DeviceGuard guard(buffer->device);
    EP_CUDA(cudaMemsetAsync(buffer->ll_mask, 0, static_cast<size_t>(buffer->geo.n_pes) * sizeof(int32_t), stream));
    return kSuccess;
  });
}

}  // extern "C"
