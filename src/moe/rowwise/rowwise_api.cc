// Entry points of the rowwise family (docs/moe.md, "Row-wise transforms of a top-k result"): argument rules, then
// dispatch.
#include "core/entry.h"
#include "rowwise/rowwise.h"

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_normalize_weight(const tshmem_moe_tensor_t *topk_weights,
                                                               tshmem_moe_tensor_t *denominator,
                                                               tshmem_moe_tensor_t *normalized, cudaStream_t stream) {
  return guarded("tshmem_moe_normalize_weight", [&]() -> Status {
    MOE_TRY(check_input(topk_weights, "topk_weights", {TSHMEM_MOE_FLOAT32}, 2, true));
    const int64_t T = topk_weights->shape[0], K = topk_weights->shape[1];
    Entry e(topk_weights->device, stream, "topk_weights");
    MOE_TRY(e.enter());
    MOE_TRY(e.outs.prepare(denominator, "denominator", TSHMEM_MOE_FLOAT32, 1, &T));
    MOE_TRY(e.outs.prepare(normalized, "normalized", TSHMEM_MOE_FLOAT32, 2, topk_weights->shape));
    if (T > 0) {
      NormalizeArgs a{static_cast<const float *>(topk_weights->data), T, K, static_cast<float *>(denominator->data),
                      static_cast<float *>(normalized->data)};
      MOE_TRY(execute(a, e.ctx, ref_normalize_weight, launch_normalize_weight));
    }
    e.outs.commit();
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
    Entry e(indices->device, stream, "indices");
    MOE_TRY(e.enter());
    MOE_TRY(e.outs.prepare(out, "out", indices->dtype, indices->ndim, indices->shape));
    const int64_t count = numel(*indices);
    if (count > 0) {
      MaskTpArgs a{indices->data, out->data,   indices->dtype == TSHMEM_MOE_INT64, count, n, num_ep_ranks,
                   tp_rank,       num_tp_ranks};
      MOE_TRY(execute(a, e.ctx, ref_mask_indices_by_tp, launch_mask_indices_by_tp));
    }
    e.outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_inplace_unique_group_indices(tshmem_moe_tensor_t *group_indices,
                                                                           int64_t num_groups, cudaStream_t stream) {
  return guarded("tshmem_moe_inplace_unique_group_indices", [&]() -> Status {
    MOE_TRY(check_input(group_indices, "group_indices", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(num_groups >= 1 && num_groups <= 128, "num_groups = %" PRId64 "; it must be in [1, 128]", num_groups);
    Entry e(group_indices->device, stream, "group_indices");  // in place: no outputs
    MOE_TRY(e.enter());
    if (numel(*group_indices) > 0) {
      UniqueArgs a{static_cast<int64_t *>(group_indices->data), group_indices->shape[0], group_indices->shape[1],
                   num_groups};
      MOE_TRY(execute(a, e.ctx, ref_unique, launch_unique));
    }
    return kSuccess;
  });
}

}  // extern "C"
