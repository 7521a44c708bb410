// The low-latency region's layout and the argument rules of the low-latency calls (low_latency/ll.h). Host only,
// no device calls: the CPU tests check every rule and its message.
#include <algorithm>
#include <cstdint>

#include "low_latency/ll.h"

namespace tshmem_ep {
namespace {

size_t pad256(size_t n) { return (n + 255) & ~size_t{255}; }

Status bad(const char *name, long long value, const char *rule) {
  return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "%s = %lld; %s", name, value, rule);
}
Status null_arg(const char *name) { return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "%s = NULL; it is required", name); }
bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

constexpr int64_t kMaxTokens = 1 << 16;  // tokens per PE: rows are indexed with 32-bit ints on the device

Status check_phases(int phases) {
  if (phases < TSHMEM_EP_LL_SEND || phases > TSHMEM_EP_LL_BOTH)
    return bad("phases", phases, "must be TSHMEM_EP_LL_SEND (1), TSHMEM_EP_LL_RECV (2) or TSHMEM_EP_LL_BOTH (3)");
  return kSuccess;
}

/// The rules dispatch and combine share (their argument structs name these fields alike): the struct, the phases,
/// the shape, the token count and top-k.
template <class Args>
Status check_ll_call(const Geometry &g, const Args *a, int phases) {
  if (!a) return null_arg("args");
  EP_TRY(check_phases(phases));
  EP_TRY(check_ll_shape(g, a->num_max_dispatch_tokens_per_rank, a->hidden, a->num_experts));
  if (a->num_tokens < 0 || a->num_tokens > a->num_max_dispatch_tokens_per_rank)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT,
                "num_tokens = %lld; must be in [0, num_max_dispatch_tokens_per_rank = %lld]",
                static_cast<long long>(a->num_tokens), static_cast<long long>(a->num_max_dispatch_tokens_per_rank));
  if (a->num_topk < 1 || a->num_topk > TSHMEM_EP_MAX_TOPK)
    return bad("num_topk", a->num_topk, "must be in [1, TSHMEM_EP_MAX_TOPK = 32]");
  return kSuccess;
}

}  // namespace

LlLayout ll_layout(int n_pes, int64_t max_tokens, int64_t hidden, int64_t num_experts) {
  LlLayout l;
  l.n_pes = n_pes;
  l.num_experts = num_experts;
  l.local_experts = num_experts / n_pes;
  l.max_tokens = max_tokens;
  l.hidden = hidden;
  l.dispatch_msg_bf16 = ll_msg_bytes(hidden, false);
  l.combine_row = static_cast<size_t>(hidden) * 2;
  const size_t e = static_cast<size_t>(num_experts), m = static_cast<size_t>(max_tokens);
  l.count_off = 0;
  l.flag_off = e * sizeof(uint64_t);  // L * N counts
  l.signal_bytes = pad256(2 * e * sizeof(uint64_t));
  l.send_off = l.signal_bytes;
  const size_t send = pad256(std::max(m * l.dispatch_msg_bf16, e * m * l.combine_row));
  l.recv_off = l.send_off + send;
  const size_t recv = pad256(e * m * std::max(l.dispatch_msg_bf16, l.combine_row));
  l.slot_bytes = l.recv_off + recv;
  l.total_bytes = 2 * l.slot_bytes;
  return l;
}

Status check_ll_shape(const Geometry &g, int64_t max_tokens, int64_t hidden, int64_t num_experts) {
  if (max_tokens < 1 || max_tokens > kMaxTokens)
    return bad("num_max_dispatch_tokens_per_rank", max_tokens, "must be in [1, 65536]");
  if (hidden < 8 || hidden % 8 != 0 || hidden > (1 << 20))
    return bad("hidden", hidden, "must be a multiple of 8 in [8, 1048576] (bf16 rows of whole 16-byte units)");
  EP_TRY(check_experts(g, num_experts));
  return kSuccess;
}

Status check_ll_fits(const Geometry &g, const LlLayout &l) {
  if (l.total_bytes > g.rdma_bytes)
    return fail(TSHMEM_EP_ERR_BUFFER_TOO_SMALL,
                "the low-latency slots of %lld tokens per PE, hidden %lld, %lld experts over %lld PEs need %zu bytes "
                "of num_rdma_bytes; the buffer has %zu (tshmem_ep_low_latency_rdma_size_hint)",
                static_cast<long long>(l.max_tokens), static_cast<long long>(l.hidden),
                static_cast<long long>(l.num_experts), static_cast<long long>(l.n_pes), l.total_bytes, g.rdma_bytes);
  return kSuccess;
}

Status check_ll_dispatch_args(const Geometry &g, const tshmem_ep_ll_dispatch_args_t *a, int phases) {
  EP_TRY(check_ll_call(g, a, phases));
  if (a->use_ue8m0 && !a->use_fp8) return bad("use_ue8m0", a->use_ue8m0, "needs use_fp8");
  if (a->use_ue8m0 && !a->round_scale)
    return bad("use_ue8m0", a->use_ue8m0, "needs round_scale (UE8M0 scales are powers of 2)");
  if (a->round_scale && !a->use_fp8) return bad("round_scale", a->round_scale, "needs use_fp8");
  if (a->use_fp8 && a->hidden % (a->use_ue8m0 ? 512 : 128) != 0)
    return bad("hidden", a->hidden,
               a->use_ue8m0 ? "with use_ue8m0 must be a multiple of 512 (four 128-channel scales per int32)"
                            : "with use_fp8 must be a multiple of 128 (one scale per 128 channels)");
  if (phases & TSHMEM_EP_LL_SEND) {
    if (a->num_tokens > 0 && !a->x) return null_arg("x");
    if (a->num_tokens > 0 && !a->topk_idx) return null_arg("topk_idx");
    if (!aligned16(a->x)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "x = %p; must be 16-byte aligned", a->x);
  }
  if (phases & TSHMEM_EP_LL_RECV) {
    if (!a->packed_recv_x) return null_arg("packed_recv_x");
    if (!aligned16(a->packed_recv_x))
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "packed_recv_x = %p; must be 16-byte aligned", a->packed_recv_x);
    if (a->use_fp8 && !a->packed_recv_x_scales) return null_arg("packed_recv_x_scales");
    if (!a->packed_recv_count) return null_arg("packed_recv_count");
    if (!a->packed_recv_src_info) return null_arg("packed_recv_src_info");
    if (!a->packed_recv_layout_range) return null_arg("packed_recv_layout_range");
  }
  return kSuccess;
}

Status check_ll_combine_args(const Geometry &g, const tshmem_ep_ll_combine_args_t *a, int phases) {
  EP_TRY(check_ll_call(g, a, phases));
  if (phases & TSHMEM_EP_LL_SEND) {
    if (!a->zero_copy && !a->x) return null_arg("x");
    if (!a->zero_copy && !aligned16(a->x))
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "x = %p; must be 16-byte aligned", a->x);
    if (!a->src_info) return null_arg("src_info");
    if (!a->layout_range) return null_arg("layout_range");
  }
  if (phases & TSHMEM_EP_LL_RECV && a->num_tokens > 0) {
    if (!a->topk_idx) return null_arg("topk_idx");
    if (!a->topk_weights) return null_arg("topk_weights");
    if (!a->combined_x) return null_arg("combined_x");
    if (!aligned16(a->combined_x))
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "combined_x = %p; must be 16-byte aligned", a->combined_x);
  }
  return kSuccess;
}

}  // namespace tshmem_ep
