// Entry points of the mapping family (docs/moe.md, "The fused layout"): argument rules, then dispatch.
#include <cstring>
#include <vector>

#include "core/entry.h"
#include "mapping/mapping.h"

using namespace tshmem_moe;

namespace {

// The index inputs shared by both expands: token_topk_to_pos [T, K] int32 and pos_to_expert [P] int32.
Status check_expand_maps(const Tensor *x, const Tensor *pos, const Tensor *pte) {
  MOE_TRY(check_secondary(pos, "token_topk_to_pos", {TSHMEM_MOE_INT32}, 2, true, x->device, "x"));
  MOE_TRY(check_dim(*pos, "token_topk_to_pos", 0, x->shape[0], "T = x.shape[0]"));
  MOE_TRY(check_secondary(pte, "pos_to_expert", {TSHMEM_MOE_INT32}, 1, true, x->device, "x"));
  return kSuccess;
}

Status expand_common(const char *call, const Tensor *x, const Tensor *x_sf, int64_t npc, const Tensor *pos,
                     const Tensor *pte, bool col_major, Tensor *x_fused, Tensor *sf_fused, cudaStream_t stream) {
  (void)call;
  MOE_TRY(check_input(x, "x",
                      {TSHMEM_MOE_BOOL, TSHMEM_MOE_INT32, TSHMEM_MOE_INT64, TSHMEM_MOE_FLOAT32, TSHMEM_MOE_BFLOAT16,
                       TSHMEM_MOE_FLOAT8_E4M3},
                      2, true));
  MOE_TRY(check_expand_maps(x, pos, pte));
  const int64_t T = x->shape[0], H = x->shape[1], K = pos->shape[1], P = pte->shape[0];
  MOE_LIMIT(P <= INT32_MAX, "P = %" PRId64 " rows; positions are int32", P);
  int64_t hsf = 0;
  if (x_sf) {
    MOE_TRY(check_secondary(x_sf, "x_sf", {TSHMEM_MOE_FLOAT32, TSHMEM_MOE_INT32}, 2, true, x->device, "x"));
    MOE_REQUIRE(npc == 32 || npc == 128, "num_per_channels = %" PRId64 "; it must be 32 or 128", npc);
    const bool packed = x_sf->dtype == TSHMEM_MOE_INT32;
    MOE_REQUIRE(!packed || col_major, "x_sf is int32 (packed UE8M0) so use_tma_aligned_col_major_sf must be true");
    hsf = packed ? ceil_div(ceil_div(H, npc), 4) : ceil_div(H, npc);
    MOE_TRY(check_dim(*x_sf, "x_sf", 0, T, "T = x.shape[0]"));
    MOE_TRY(check_dim(
        *x_sf, "x_sf", 1, hsf,
        packed ? "hidden_sf = ceil(ceil(H / num_per_channels) / 4)" : "hidden_sf = ceil(H / num_per_channels)"));
  }
  Entry e(x->device, stream, "x");
  MOE_TRY(e.enter());
  const int64_t shape[2] = {P, H};
  MOE_TRY(e.outs.prepare(x_fused, "x_fused", x->dtype, 2, shape));
  const int64_t P4 = align_up(P, 4);
  if (x_sf) {
    const int64_t sshape[2] = {P, hsf};
    const int64_t cm_strides[2] = {1, P4};
    MOE_TRY(e.outs.prepare(sf_fused, "sf_fused", x_sf->dtype, 2, sshape, col_major ? cm_strides : nullptr,
                           col_major ? hsf * P4 : -1));
  }
  if (P > 0 || T > 0) {  // also when T == 0: padding rows are zeroed (the spec's recommended, safer behaviour)
    ExpandArgs a{};
    a.x = x->data;
    a.T = T, a.H = H, a.esize = static_cast<int64_t>(tshmem_moe_dtype_size(x->dtype));
    a.pos = static_cast<const int32_t *>(pos->data);
    a.K = K;
    a.pos_to_expert = static_cast<const int32_t *>(pte->data);
    a.P = P;
    a.out = x_fused->data;
    if (x_sf) {
      a.x_sf = static_cast<const uint32_t *>(x_sf->data);
      a.hsf = hsf;
      a.col_major = col_major;
      a.P4 = P4;
      a.sf_out = static_cast<uint32_t *>(sf_fused->data);
    }
    MOE_TRY(execute(a, e.ctx, ref_expand, launch_expand));
  }
  e.outs.commit();
  return kSuccess;
}

}  // namespace

extern "C" {

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
    Entry e(dev, stream, "topk_idx");
    MOE_TRY(e.enter());
    MOE_TRY(e.outs.prepare(&m->pos_to_expert, "pos_to_expert", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(e.outs.prepare(&m->pos_to_token, "pos_to_token", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(e.outs.prepare(&m->pos_to_token_topk, "pos_to_token_topk", TSHMEM_MOE_INT32, 1, &P));
    MOE_TRY(e.outs.prepare(&m->token_topk_to_pos, "token_topk_to_pos", TSHMEM_MOE_INT32, 2, topk_idx->shape));
    MOE_TRY(e.outs.prepare(&m->expert_start, "expert_start", TSHMEM_MOE_INT32, 1, &E));
    MOE_TRY(e.outs.prepare(&m->expert_end, "expert_end", TSHMEM_MOE_INT32, 1, &E));
    MOE_TRY(e.outs.prepare(&m->num_tokens_per_expert, "num_tokens_per_expert", TSHMEM_MOE_INT32, 1, &E));
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
    MOE_TRY(execute(a, e.ctx, ref_get_fused_mapping, launch_get_fused_mapping));
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
    e.outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_expand_to_fused(const tshmem_moe_tensor_t *x,
                                                              const tshmem_moe_tensor_t *token_topk_to_pos,
                                                              const tshmem_moe_tensor_t *pos_to_expert,
                                                              tshmem_moe_tensor_t *x_fused, cudaStream_t stream) {
  return guarded("tshmem_moe_expand_to_fused", [&]() -> Status {
    return expand_common("tshmem_moe_expand_to_fused", x, nullptr, 0, token_topk_to_pos, pos_to_expert, false, x_fused,
                         nullptr, stream);
  });
}

TSHMEM_MOE_API tshmem_moe_status_t
tshmem_moe_expand_to_fused_with_sf(const tshmem_moe_tensor_t *x, const tshmem_moe_tensor_t *x_sf,
                                   int64_t num_per_channels, const tshmem_moe_tensor_t *token_topk_to_pos,
                                   const tshmem_moe_tensor_t *pos_to_expert, int32_t use_tma_aligned_col_major_sf,
                                   tshmem_moe_tensor_t *x_fused, tshmem_moe_tensor_t *sf_fused, cudaStream_t stream) {
  return guarded("tshmem_moe_expand_to_fused_with_sf", [&]() -> Status {
    MOE_REQUIRE(x_sf != nullptr, "tensor 'x_sf' is required but NULL");
    return expand_common("tshmem_moe_expand_to_fused_with_sf", x, x_sf, num_per_channels, token_topk_to_pos,
                         pos_to_expert, use_tma_aligned_col_major_sf != 0, x_fused, sf_fused, stream);
  });
}

}  // extern "C"
