// Entry point of the reduce family (docs/moe.md, "Reduction"): argument rules, then dispatch.
#include <cstring>

#include "core/entry.h"
#include "reduce/reduce.h"

using namespace tshmem_moe;

extern "C" {

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
    Entry e(dev, stream, "x");
    MOE_TRY(e.enter());
    const tshmem_moe_dtype_t out_dtype = fp8 ? TSHMEM_MOE_FLOAT8_E4M3 : x->dtype;
    const int64_t shape[2] = {T, H};
    MOE_TRY(e.outs.prepare(y, "out", out_dtype, 2, shape));
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
      MOE_TRY(execute(a, e.ctx, ref_reduce_fused, launch_reduce_fused));
    }
    e.outs.commit();
    return kSuccess;
  });
}

}  // extern "C"
