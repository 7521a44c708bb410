// The host-side rules of every entry point (core/checks.h). Messages name the argument, its value and the rule.
#include "core/checks.h"

#include <cinttypes>

#include "core/rows.h"

namespace tshmem_ep {
namespace {

Status bad(const char *fmt_arg, long long value, const char *rule) {
  return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "%s = %lld; %s", fmt_arg, value, rule);
}

Status null_arg(const char *name) { return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "%s = NULL; it is required", name); }

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

Status check_buffer_sizes(size_t num_nvl_bytes, size_t num_rdma_bytes) {
  if (num_nvl_bytes == 0 && num_rdma_bytes == 0)
    return bad("num_nvl_bytes", 0,
               "must be > 0 (the rows this PE receives live there), or num_rdma_bytes > 0 for low-latency mode");
  if (num_nvl_bytes % 16 != 0)
    return bad("num_nvl_bytes", static_cast<long long>(num_nvl_bytes), "must be a multiple of 16");
  if (num_rdma_bytes % 16 != 0)
    return bad("num_rdma_bytes", static_cast<long long>(num_rdma_bytes), "must be a multiple of 16");
  return kSuccess;
}

Status check_experts(const Geometry &g, int64_t num_experts) {
  if (num_experts < 1) return bad("num_experts", num_experts, "must be >= 1");
  if (num_experts > TSHMEM_EP_MAX_EXPERTS)
    return fail(TSHMEM_EP_ERR_UNSUPPORTED, "num_experts = %lld; at most TSHMEM_EP_MAX_EXPERTS = %d are supported",
                static_cast<long long>(num_experts), TSHMEM_EP_MAX_EXPERTS);
  if (num_experts % g.n_pes != 0)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT,
                "num_experts = %lld; must be a multiple of the PE count %d (experts are split evenly over PEs)",
                static_cast<long long>(num_experts), g.n_pes);
  return kSuccess;
}

Status check_layout_args(const Geometry &g, const int64_t *topk_idx, int64_t num_tokens, int64_t num_topk,
                         int64_t num_experts, const int32_t *per_rank, const int32_t *per_expert, const bool *in_rank) {
  if (num_tokens < 0) return bad("num_tokens", num_tokens, "must be >= 0");
  if (num_topk < 1 || num_topk > TSHMEM_EP_MAX_TOPK)
    return bad("num_topk", num_topk, "must be in [1, TSHMEM_EP_MAX_TOPK = 32]");
  EP_TRY(check_experts(g, num_experts));
  if (num_tokens > 0 && !topk_idx) return null_arg("topk_idx");
  if (!per_rank) return null_arg("num_tokens_per_rank");
  if (!per_expert) return null_arg("num_tokens_per_expert");
  if (num_tokens > 0 && !in_rank) return null_arg("is_token_in_rank");
  if (num_tokens > INT32_MAX / g.n_pes) return bad("num_tokens", num_tokens, "num_tokens * n_pes must fit in int32");
  return kSuccess;
}

Status check_handle_args(const Geometry &g, int64_t max_tokens, int64_t num_experts) {
  if (max_tokens < 0) return bad("max_tokens", max_tokens, "must be >= 0");
  if (max_tokens > INT32_MAX / g.n_pes) return bad("max_tokens", max_tokens, "max_tokens * n_pes must fit in int32");
  return check_experts(g, num_experts);
}

Status check_notify_args(const Geometry &g, int64_t handle_max_tokens, int64_t handle_experts, const bool *in_rank,
                         const int32_t *per_expert, int64_t num_tokens, int64_t num_experts, int64_t expert_alignment,
                         int64_t num_worst_tokens, const int64_t *num_recv_tokens) {
  if (num_tokens < 0) return bad("num_tokens", num_tokens, "must be >= 0");
  if (num_tokens > handle_max_tokens)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_tokens = %lld; the handle holds routes of at most %lld tokens",
                static_cast<long long>(num_tokens), static_cast<long long>(handle_max_tokens));
  EP_TRY(check_experts(g, num_experts));
  if (num_experts != handle_experts)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_experts = %lld; the handle was made for %lld experts",
                static_cast<long long>(num_experts), static_cast<long long>(handle_experts));
  if (expert_alignment < 1) return bad("expert_alignment", expert_alignment, "must be >= 1");
  if (expert_alignment > (int64_t{1} << 24)) return bad("expert_alignment", expert_alignment, "must be <= 2^24");
  if (num_worst_tokens < 0) return bad("num_worst_tokens", num_worst_tokens, "must be >= 0 (0: synchronise once)");
  if (num_tokens > 0 && !in_rank) return null_arg("is_token_in_rank");
  if (!per_expert) return null_arg("num_tokens_per_expert");
  if (!num_recv_tokens) return null_arg("num_recv_tokens");
  return kSuccess;
}

Status check_dispatch_args(const Geometry &g, int64_t notified_tokens, const void *x, tshmem_ep_dtype_t x_dtype,
                           const float *x_scales, int64_t num_tokens, int64_t hidden, const int64_t *topk_idx,
                           const float *topk_weights, int64_t num_topk, const void *recv_x, const float *recv_x_scales,
                           int64_t recv_capacity) {
  (void)g;
  if (x_dtype != TSHMEM_EP_BFLOAT16 && x_dtype != TSHMEM_EP_FLOAT8_E4M3)
    return bad("x_dtype", static_cast<long long>(x_dtype),
               "dispatch sends TSHMEM_EP_BFLOAT16 (0) or TSHMEM_EP_FLOAT8_E4M3 (1) rows");
  if (hidden < 1) return bad("hidden", hidden, "must be >= 1");
  const bool fp8 = x_dtype == TSHMEM_EP_FLOAT8_E4M3;
  if (fp8 && hidden % TSHMEM_EP_FP8_BLOCK != 0)
    return bad("hidden", hidden, "fp8 rows carry one scale per 128 channels: hidden must be a multiple of 128");
  if (!fp8 && hidden % 8 != 0)
    return bad("hidden", hidden, "a bf16 row must be a multiple of 16 bytes: hidden must be a multiple of 8");
  if (num_tokens != notified_tokens)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_tokens = %lld; the handle's notify had %lld tokens",
                static_cast<long long>(num_tokens), static_cast<long long>(notified_tokens));
  if (num_tokens > 0 && !x) return null_arg("x");
  if (!aligned16(x)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "x = %p; must be 16-byte aligned", x);
  if (fp8 && num_tokens > 0 && !x_scales) return null_arg("x_scales (fp8 rows need their scales)");
  if (!fp8 && x_scales)
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "x_scales = %p; bf16 rows have no scales (pass NULL)",
                static_cast<const void *>(x_scales));
  // An array of zero elements may be NULL (an empty tensor's data pointer): with num_tokens == 0, num_topk alone
  // says whether top-k entries travel (every PE passes the same num_topk: it shapes the rows).
  const bool no_tokens = num_tokens == 0;
  if (!no_tokens && (topk_idx == nullptr) != (topk_weights == nullptr))
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "topk_idx = %p, topk_weights = %p; pass both or neither",
                static_cast<const void *>(topk_idx), static_cast<const void *>(topk_weights));
  const bool with_topk = topk_idx || topk_weights || (no_tokens && num_topk != 0);
  if (with_topk && (num_topk < 1 || num_topk > TSHMEM_EP_MAX_TOPK))
    return bad("num_topk", num_topk, "must be in [1, TSHMEM_EP_MAX_TOPK = 32] when topk_idx is given");
  if (!with_topk && num_topk != 0)
    return bad("num_topk", num_topk,
               "must be 0 when topk_idx is NULL (NULL stands for an empty array only when "
               "num_tokens is 0)");
  if (recv_capacity < 0) return bad("recv_capacity", recv_capacity, "must be >= 0");
  if (recv_capacity > 0 && !recv_x) return null_arg("recv_x");
  if (!aligned16(recv_x)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "recv_x = %p; must be 16-byte aligned", recv_x);
  if (fp8 && recv_capacity > 0 && !recv_x_scales) return null_arg("recv_x_scales (fp8 rows need their scales)");
  return kSuccess;
}

Status check_combine_args(const Geometry &g, const void *x, tshmem_ep_dtype_t x_dtype, int64_t num_rows, int64_t hidden,
                          const float *topk_weights, int64_t num_topk, const float *combined_topk_weights,
                          const void *combined_x, const void *bias0, const void *bias1, int64_t num_tokens) {
  (void)g;
  if (x_dtype != TSHMEM_EP_BFLOAT16)
    return bad("x_dtype", static_cast<long long>(x_dtype), "combine sums TSHMEM_EP_BFLOAT16 (0) rows only");
  if (hidden < 1) return bad("hidden", hidden, "must be >= 1");
  if (hidden % 8 != 0)
    return bad("hidden", hidden, "a bf16 row must be a multiple of 16 bytes: hidden must be a multiple of 8");
  if (num_rows < 0) return bad("num_rows", num_rows, "must be >= 0");
  if (num_rows > 0 && !x) return null_arg("x");
  if (!aligned16(x)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "x = %p; must be 16-byte aligned", x);
  if (num_tokens != 0 && !combined_x) return null_arg("combined_x");
  if (!aligned16(combined_x))
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "combined_x = %p; must be 16-byte aligned", combined_x);
  if (!aligned16(bias0)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "bias0 = %p; must be 16-byte aligned", bias0);
  if (!aligned16(bias1)) return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "bias1 = %p; must be 16-byte aligned", bias1);
  // topk_weights [num_rows, num_topk] and combined_topk_weights [num_tokens, num_topk]: both or neither, where an
  // array of zero elements may be NULL (num_topk then says that the weights travel).
  const bool weights_missing = !topk_weights && num_rows != 0;
  const bool combined_missing = !combined_topk_weights && num_tokens != 0;
  const auto both_or_neither = [&] {
    return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "topk_weights = %p, combined_topk_weights = %p; pass both or neither",
                static_cast<const void *>(topk_weights), static_cast<const void *>(combined_topk_weights));
  };
  if (num_topk == 0) {
    if (topk_weights)
      return bad("num_topk", num_topk, "must be in [1, TSHMEM_EP_MAX_TOPK = 32] when topk_weights is given");
    if (combined_topk_weights) return both_or_neither();
    return kSuccess;
  }
  if (num_topk < 1 || num_topk > TSHMEM_EP_MAX_TOPK)
    return bad("num_topk", num_topk, "must be in [1, TSHMEM_EP_MAX_TOPK = 32] when topk_weights is given");
  if (weights_missing)
    return bad("num_topk", num_topk, "must be 0 when topk_weights is NULL (NULL stands for an empty array only)");
  if (combined_missing) return both_or_neither();
  return kSuccess;
}

Status check_fits(const char *area, size_t area_bytes, int64_t rows, size_t stride, const char *what) {
  const unsigned long long need = static_cast<unsigned long long>(rows) * stride;
  if (need <= area_bytes) return kSuccess;
  return fail(TSHMEM_EP_ERR_BUFFER_TOO_SMALL,
              "%s needs %llu bytes of %s (%lld rows of %zu bytes); the buffer has %zu: create it larger "
              "(tshmem_ep_buffer_size_hint)",
              what, need, area, static_cast<long long>(rows), stride, area_bytes);
}

Status check_recv_capacity(int64_t recv_capacity, int64_t needed, const char *what) {
  if (recv_capacity >= needed) return kSuccess;
  return fail(TSHMEM_EP_ERR_BUFFER_TOO_SMALL, "recv_capacity = %lld; %s needs %lld rows",
              static_cast<long long>(recv_capacity), what, static_cast<long long>(needed));
}

}  // namespace tshmem_ep
