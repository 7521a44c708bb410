// Entry points of expand_to_fused, expand_to_fused_with_sf and reduce_fused (spec §14-§16).
#include <cstring>

#include "api_util.h"

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
  DeviceGuard guard;
  LaunchCtx ctx;
  MOE_TRY(enter_device(guard, x->device, stream, &ctx));
  Outputs outs(x->device, stream, "x");
  const int64_t shape[2] = {P, H};
  MOE_TRY(outs.prepare(x_fused, "x_fused", x->dtype, 2, shape));
  const int64_t P4 = align_up(P, 4);
  if (x_sf) {
    const int64_t sshape[2] = {P, hsf};
    const int64_t cm_strides[2] = {1, P4};
    MOE_TRY(outs.prepare(sf_fused, "sf_fused", x_sf->dtype, 2, sshape, col_major ? cm_strides : nullptr,
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
    MOE_TRY(execute(a, ctx, ref_expand, launch_expand));
  }
  outs.commit();
  return kSuccess;
}

}  // namespace

extern "C" {

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

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_reduce_fused(const tshmem_moe_tensor_t *x,
                                                           const tshmem_moe_tensor_t *x_sf,
                                                           const tshmem_moe_tensor_t *topk_weights,
                                                           const tshmem_moe_tensor_t *token_topk_to_pos,
                                                           const char *fp8_format, const tshmem_moe_tensor_t *sf,
                                                           tshmem_moe_tensor_t *y, cudaStream_t stream) {
  return guarded("tshmem_moe_reduce_fused", [&]() -> Status {
    MOE_TRY(check_input(x, "x", {TSHMEM_MOE_FLOAT32, TSHMEM_MOE_BFLOAT16}, 2, true));
    const int dev = x->device;
    const int64_t P = x->shape[0], H = x->shape[1];
    MOE_REQUIRE(H % 256 == 0, "x has hidden size H = %" PRId64 "; it must be a multiple of 256", H);
    MOE_TRY(check_secondary(token_topk_to_pos, "token_topk_to_pos", {TSHMEM_MOE_INT32}, 2, true, dev, "x"));
    const int64_t T = token_topk_to_pos->shape[0], K = token_topk_to_pos->shape[1];
    MOE_TRY(check_optional(x_sf, "x_sf", {TSHMEM_MOE_FLOAT32}, 1, true, dev, "x"));
    if (x_sf) MOE_TRY(check_dim(*x_sf, "x_sf", 0, P, "P = x.shape[0]: one multiplier per fused row"));
    MOE_TRY(check_optional(topk_weights, "topk_weights", {TSHMEM_MOE_FLOAT32}, 2, true, dev, "x"));
    if (topk_weights) {
      MOE_TRY(check_dim(*topk_weights, "topk_weights", 0, T, "T = token_topk_to_pos.shape[0]"));
      MOE_TRY(check_dim(*topk_weights, "topk_weights", 1, K, "K = token_topk_to_pos.shape[1]"));
    }
    const bool fp8 = fp8_format != nullptr && std::strcmp(fp8_format, "e4m3") == 0;
    MOE_REQUIRE(fp8 || fp8_format == nullptr || fp8_format[0] == 0,
                "fp8_format = '%s'; it must be '' (output dtype of x) or 'e4m3'", fp8_format);
    MOE_REQUIRE(sf == nullptr || fp8, "sf is given but fp8_format is not 'e4m3'; sf is only allowed with e4m3 output");
    MOE_TRY(check_optional(sf, "sf", {TSHMEM_MOE_FLOAT32}, -1, true, dev, "x"));
    if (sf) MOE_REQUIRE(numel(*sf) == 1, "sf has %" PRId64 " elements; it must have exactly 1", numel(*sf));
    DeviceGuard guard;
    LaunchCtx ctx;
    MOE_TRY(enter_device(guard, dev, stream, &ctx));
    Outputs outs(dev, stream, "x");
    const tshmem_moe_dtype_t out_dtype = fp8 ? TSHMEM_MOE_FLOAT8_E4M3 : x->dtype;
    const int64_t shape[2] = {T, H};
    MOE_TRY(outs.prepare(y, "out", out_dtype, 2, shape));
    if (T > 0 && H > 0) {
      ReduceArgs a{};
      a.x = x->data;
      a.x_bf16 = x->dtype == TSHMEM_MOE_BFLOAT16;
      a.P = P, a.H = H;
      a.x_sf = x_sf ? static_cast<const float *>(x_sf->data) : nullptr;
      a.w = topk_weights ? static_cast<const float *>(topk_weights->data) : nullptr;
      a.pos = static_cast<const int32_t *>(token_topk_to_pos->data);
      a.T = T, a.K = K;
      a.sf = sf ? static_cast<const float *>(sf->data) : nullptr;
      a.out_dtype = out_dtype;
      a.out = y->data;
      MOE_TRY(execute(a, ctx, ref_reduce_fused, launch_reduce_fused));
    }
    outs.commit();
    return kSuccess;
  });
}

}  // extern "C"
