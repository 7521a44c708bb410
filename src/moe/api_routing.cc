// Entry points of the counting and index kernels and of get_fused_mapping (spec §8-§13).
#include <cstring>
#include <vector>

#include "api_util.h"

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_group_count(const tshmem_moe_tensor_t *group_idx, int64_t num_groups,
                                                          tshmem_moe_tensor_t *counts, cudaStream_t stream) {
  return guarded("tshmem_moe_group_count", [&]() -> Status {
    MOE_TRY(check_input(group_idx, "group_idx", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(num_groups >= 0 && num_groups <= INT32_MAX, "num_groups = %" PRId64 "; it must be in [0, 2^31)",
                num_groups);
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, group_idx->device, stream, &ctx));
    Outputs outs(group_idx->device, stream, "group_idx");
    MOE_TRY(outs.prepare(counts, "counts", TSHMEM_MOE_INT32, 1, &num_groups));
    if (num_groups > 0) {
      GroupCountArgs a{static_cast<const int64_t *>(group_idx->data), numel(*group_idx), num_groups,
                       static_cast<int32_t *>(counts->data)};
      MOE_TRY(execute(a, ctx, ref_group_count, launch_group_count));
    } else if (numel(*group_idx) > 0) {
      // Every entry must be -1 when there are no groups; the reference checks that cheaply for both paths.
      MOE_REQUIRE(false, "num_groups = 0 but group_idx has %" PRId64 " entries (they must be in [-1, 0))",
                  numel(*group_idx));
    }
    outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_aux_fi(const tshmem_moe_tensor_t *topk_idx, int64_t num_experts,
                                                     int64_t num_aux_topk, tshmem_moe_tensor_t *fi,
                                                     cudaStream_t stream) {
  return guarded("tshmem_moe_aux_fi", [&]() -> Status {
    MOE_TRY(check_input(topk_idx, "topk_idx", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(num_experts >= 1 && num_experts <= INT32_MAX, "num_experts = %" PRId64 "; it must be in [1, 2^31)",
                num_experts);
    MOE_REQUIRE(num_aux_topk >= 1, "num_aux_topk = %" PRId64 "; it must be >= 1", num_aux_topk);
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, topk_idx->device, stream, &ctx));
    Outputs outs(topk_idx->device, stream, "topk_idx");
    MOE_TRY(outs.prepare(fi, "fi", TSHMEM_MOE_FLOAT32, 1, &num_experts));
    AuxFiArgs a{static_cast<const int64_t *>(topk_idx->data),
                topk_idx->shape[0],
                topk_idx->shape[1],
                num_experts,
                num_aux_topk,
                static_cast<float *>(fi->data)};
    MOE_TRY(execute(a, ctx, ref_aux_fi, launch_aux_fi));
    outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_normalize_weight(const tshmem_moe_tensor_t *topk_weights,
                                                               tshmem_moe_tensor_t *denominator,
                                                               tshmem_moe_tensor_t *normalized, cudaStream_t stream) {
  return guarded("tshmem_moe_normalize_weight", [&]() -> Status {
    MOE_TRY(check_input(topk_weights, "topk_weights", {TSHMEM_MOE_FLOAT32}, 2, true));
    const int64_t T = topk_weights->shape[0], K = topk_weights->shape[1];
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, topk_weights->device, stream, &ctx));
    Outputs outs(topk_weights->device, stream, "topk_weights");
    MOE_TRY(outs.prepare(denominator, "denominator", TSHMEM_MOE_FLOAT32, 1, &T));
    MOE_TRY(outs.prepare(normalized, "normalized", TSHMEM_MOE_FLOAT32, 2, topk_weights->shape));
    if (T > 0) {
      NormalizeArgs a{static_cast<const float *>(topk_weights->data), T, K, static_cast<float *>(denominator->data),
                      static_cast<float *>(normalized->data)};
      MOE_TRY(execute(a, ctx, ref_normalize_weight, launch_normalize_weight));
    }
    outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_mask_indices_by_tp(const tshmem_moe_tensor_t *indices, int64_t n,
                                                                 int64_t num_ep_ranks, int64_t tp_rank,
                                                                 int64_t num_tp_ranks, tshmem_moe_tensor_t *out,
                                                                 cudaStream_t stream) {
  return guarded("tshmem_moe_mask_indices_by_tp", [&]() -> Status {
    MOE_TRY(check_input(indices, "indices", {TSHMEM_MOE_INT64, TSHMEM_MOE_INT32}, -1, true));
    MOE_REQUIRE(num_ep_ranks >= 1, "num_ep_ranks = %" PRId64 "; it must be >= 1", num_ep_ranks);
    MOE_REQUIRE(n >= num_ep_ranks, "n = %" PRId64 " < num_ep_ranks = %" PRId64 ": every EP rank must own an expert", n,
                num_ep_ranks);
    MOE_REQUIRE(num_tp_ranks >= 1 && tp_rank >= 0 && tp_rank < num_tp_ranks,
                "tp_rank = %" PRId64 ", num_tp_ranks = %" PRId64 " must satisfy 0 <= tp_rank < num_tp_ranks", tp_rank,
                num_tp_ranks);
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, indices->device, stream, &ctx));
    Outputs outs(indices->device, stream, "indices");
    MOE_TRY(outs.prepare(out, "out", indices->dtype, indices->ndim, indices->shape));
    const int64_t count = numel(*indices);
    if (count > 0) {
      MaskTpArgs a{indices->data, out->data,   indices->dtype == TSHMEM_MOE_INT64, count, n, num_ep_ranks,
                   tp_rank,       num_tp_ranks};
      MOE_TRY(execute(a, ctx, ref_mask_indices_by_tp, launch_mask_indices_by_tp));
    }
    outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_inplace_unique_group_indices(tshmem_moe_tensor_t *group_indices,
                                                                           int64_t num_groups, cudaStream_t stream) {
  return guarded("tshmem_moe_inplace_unique_group_indices", [&]() -> Status {
    MOE_TRY(check_input(group_indices, "group_indices", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(num_groups >= 1 && num_groups <= 128, "num_groups = %" PRId64 "; it must be in [1, 128]", num_groups);
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, group_indices->device, stream, &ctx));
    if (numel(*group_indices) > 0) {
      UniqueArgs a{static_cast<int64_t *>(group_indices->data), group_indices->shape[0], group_indices->shape[1],
                   num_groups};
      MOE_TRY(execute(a, ctx, ref_unique, launch_unique));
    }
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_fused_mapping(const tshmem_moe_tensor_t *topk_idx,
                                                                int64_t num_experts, int64_t num_expanded_tokens,
                                                                int64_t alignment, int32_t force_no_sync,
                                                                tshmem_moe_fused_mapping_t *m,
                                                                int32_t *num_tokens_per_expert_host,
                                                                int32_t *host_list_filled, cudaStream_t stream) {
  return guarded("tshmem_moe_get_fused_mapping", [&]() -> Status {
    if (host_list_filled) *host_list_filled = 0;
    MOE_TRY(check_input(topk_idx, "topk_idx", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(m != nullptr, "mapping (the output struct) is NULL");
    const int64_t T = topk_idx->shape[0], K = topk_idx->shape[1], E = num_experts;
    MOE_REQUIRE(E >= 1, "num_experts = %" PRId64 "; it must be >= 1", E);
    MOE_LIMIT(E <= 1024, "num_experts = %" PRId64 "; the kernel supports <= 1024", E);
    MOE_REQUIRE(alignment >= 1, "alignment = %" PRId64 "; it must be >= 1", alignment);
    MOE_LIMIT(alignment <= INT32_MAX, "alignment = %" PRId64 "; rows are int32, so it must be <= 2^31 - 1", alignment);
    MOE_REQUIRE(num_expanded_tokens >= 0, "num_expanded_tokens = %" PRId64 "; it must be >= 0", num_expanded_tokens);
    const bool sync_path = num_expanded_tokens == 0 && !force_no_sync;
    const int64_t P = sync_path ? align_up(T * K + (alignment - 1) * E, alignment) : num_expanded_tokens;
    MOE_LIMIT(P <= kMappingIndexLimit && T * K <= kMappingIndexLimit,
              "the mapping has %" PRId64 " slots and %" PRId64
              " rows; positions are int32, so both must be <= %" PRId64,
              T * K, P, kMappingIndexLimit);
    if (sync_path)
      MOE_REQUIRE(
          m->pos_to_expert.data == nullptr && m->pos_to_token.data == nullptr && m->pos_to_token_topk.data == nullptr,
          "with num_expanded_tokens = 0 (the sync path) the pos_to_* outputs must be library-allocated "
          "(data = NULL): their length is known only after the kernel");
    const int dev = topk_idx->device;
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, dev, stream, &ctx));
    Outputs outs(dev, stream, "topk_idx");
    MOE_TRY(outs.prepare(&m->pos_to_expert, "pos_to_expert", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(outs.prepare(&m->pos_to_token, "pos_to_token", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(outs.prepare(&m->pos_to_token_topk, "pos_to_token_topk", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(outs.prepare(&m->token_topk_to_pos, "token_topk_to_pos", TSHMEM_MOE_INT32, 2, topk_idx->shape));
    MOE_TRY(outs.prepare(&m->expert_start, "expert_start", TSHMEM_MOE_INT32, 1, &E));
    MOE_TRY(outs.prepare(&m->expert_end, "expert_end", TSHMEM_MOE_INT32, 1, &E));
    MOE_TRY(outs.prepare(&m->num_tokens_per_expert, "num_tokens_per_expert", TSHMEM_MOE_INT32, 1, &E));
    MappingArgs a{};
    a.idx = static_cast<const int64_t *>(topk_idx->data);
    a.T = T, a.K = K, a.E = E, a.P = P, a.alignment = alignment;
    a.pos_to_expert = static_cast<int32_t *>(m->pos_to_expert.data);
    a.pos_to_token = static_cast<int32_t *>(m->pos_to_token.data);
    a.pos_to_token_topk = static_cast<int32_t *>(m->pos_to_token_topk.data);
    a.token_topk_to_pos = static_cast<int32_t *>(m->token_topk_to_pos.data);
    a.expert_start = static_cast<int32_t *>(m->expert_start.data);
    a.expert_end = static_cast<int32_t *>(m->expert_end.data);
    a.num_tokens_per_expert = static_cast<int32_t *>(m->num_tokens_per_expert.data);
    a.total = nullptr;
    MOE_TRY(execute(a, ctx, ref_get_fused_mapping, launch_get_fused_mapping));
    if (sync_path) {
      // The host sync of the spec: read the aligned counts, trim the pos_to_* views to their sum.
      std::vector<int32_t> counts(static_cast<size_t>(E));
      if (dev == TSHMEM_MOE_DEVICE_CPU) {
        std::memcpy(counts.data(), a.num_tokens_per_expert, counts.size() * sizeof(int32_t));
      } else {
        MOE_CUDA(cudaMemcpyAsync(counts.data(), a.num_tokens_per_expert, counts.size() * sizeof(int32_t),
                                 cudaMemcpyDeviceToHost, stream));
        MOE_CUDA(cudaStreamSynchronize(stream));
      }
      int64_t used = 0;
      for (int32_t c : counts) used += c;
      m->pos_to_expert.shape[0] = used;
      m->pos_to_token.shape[0] = used;
      m->pos_to_token_topk.shape[0] = used;
      if (num_tokens_per_expert_host) std::memcpy(num_tokens_per_expert_host, counts.data(), counts.size() * 4);
      if (host_list_filled) *host_list_filled = 1;
    }
    outs.commit();
    return kSuccess;
  });
}

}  // extern "C"
