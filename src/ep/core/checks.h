// The host-side rules of every entry point, as pure functions of the call's arguments and the buffer's geometry,
// so that the rules and their messages are tested without a GPU. Each returns kSuccess or records a message
// "<call>: <argument> = <value>; <rule>" and returns INVALID_ARGUMENT or BUFFER_TOO_SMALL. Nothing here touches
// the device. One rule for pointers everywhere: a pointer to an array of zero elements may be NULL (the data
// pointer of an empty tensor is 0): num_tokens == 0 for x, x_scales, topk_idx, topk_weights, is_token_in_rank,
// combined_x and combined_topk_weights; num_rows == 0 for combine's x and topk_weights; recv_capacity == 0 for
// the dispatch's outputs. A NULL for an array that has elements is refused, naming the argument.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace tshmem_ep {

/// What a check needs to know of the buffer.
struct Geometry {
  int my_pe = 0;
  int n_pes = 1;
  int pes_per_node = 1;
  bool spans_nodes = false;
  size_t nvl_bytes = 0;
  size_t rdma_bytes = 0;
};

Status check_buffer_sizes(size_t num_nvl_bytes, size_t num_rdma_bytes);
Status check_experts(const Geometry &g, int64_t num_experts);
Status check_layout_args(const Geometry &g, const int64_t *topk_idx, int64_t num_tokens, int64_t num_topk,
                         int64_t num_experts, const int32_t *per_rank, const int32_t *per_expert, const bool *in_rank);
Status check_handle_args(const Geometry &g, int64_t max_tokens, int64_t num_experts);
/// handle_max_tokens / handle_experts: what the handle was made for.
Status check_notify_args(const Geometry &g, int64_t handle_max_tokens, int64_t handle_experts, const bool *in_rank,
                         const int32_t *per_expert, int64_t num_tokens, int64_t num_experts, int64_t expert_alignment,
                         int64_t num_worst_tokens, const int64_t *num_recv_tokens);
/// The per-row rules of dispatch (dtype, hidden, pointers, alignment); sizes against the buffer are separate.
Status check_dispatch_args(const Geometry &g, int64_t notified_tokens, const void *x, tshmem_ep_dtype_t x_dtype,
                           const float *x_scales, int64_t num_tokens, int64_t hidden, const int64_t *topk_idx,
                           const float *topk_weights, int64_t num_topk, const void *recv_x, const float *recv_x_scales,
                           int64_t recv_capacity);
/// num_tokens: the dispatch's (rows of combined_x), -1 when unknown (then combined_x is required).
Status check_combine_args(const Geometry &g, const void *x, tshmem_ep_dtype_t x_dtype, int64_t num_rows, int64_t hidden,
                          const float *topk_weights, int64_t num_topk, const float *combined_topk_weights,
                          const void *combined_x, const void *bias0 = nullptr, const void *bias1 = nullptr,
                          int64_t num_tokens = -1);

/// What the buffer must hold for one call: `rows` rows of `stride` bytes in the receive area (num_nvl_bytes) or
/// the staging area (num_rdma_bytes); `who` names the PE and the step for the message.
Status check_fits(const char *area, size_t area_bytes, int64_t rows, size_t stride, const char *what);
/// The outputs' rows against what is received.
Status check_recv_capacity(int64_t recv_capacity, int64_t needed, const char *what);

}  // namespace tshmem_ep
