// Entry points of the count family (docs/moe.md, "Counting"): argument rules, then dispatch.
#include "core/entry.h"
#include "count/count.h"

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_group_count(const tshmem_moe_tensor_t *group_idx, int64_t num_groups,
                                                          tshmem_moe_tensor_t *counts, cudaStream_t stream) {
  return guarded("tshmem_moe_group_count", [&]() -> Status {
    MOE_TRY(check_input(group_idx, "group_idx", {TSHMEM_MOE_INT64}, 2, true));
    MOE_REQUIRE(num_groups >= 0 && num_groups <= INT32_MAX, "num_groups = %" PRId64 "; it must be in [0, 2^31)",
                num_groups);
    Entry e(group_idx->device, stream, "group_idx");
    MOE_TRY(e.enter());
    MOE_TRY(e.outs.prepare(counts, "counts", TSHMEM_MOE_INT32, 1, &num_groups));
    if (num_groups > 0) {
      GroupCountArgs a{static_cast<const int64_t *>(group_idx->data), numel(*group_idx), num_groups,
                       static_cast<int32_t *>(counts->data)};
      MOE_TRY(execute(a, e.ctx, ref_group_count, launch_group_count));
    } else if (numel(*group_idx) > 0) {
      // Every entry must be -1 when there are no groups; the reference checks that cheaply for both paths.
      MOE_REQUIRE(false, "num_groups = 0 but group_idx has %" PRId64 " entries (they must be in [-1, 0))",
                  numel(*group_idx));
    }
    e.outs.commit();
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
    Entry e(topk_idx->device, stream, "topk_idx");
    MOE_TRY(e.enter());
    MOE_TRY(e.outs.prepare(fi, "fi", TSHMEM_MOE_FLOAT32, 1, &num_experts));
    AuxFiArgs a{static_cast<const int64_t *>(topk_idx->data),
                topk_idx->shape[0],
                topk_idx->shape[1],
                num_experts,
                num_aux_topk,
                static_cast<float *>(fi->data)};
    MOE_TRY(execute(a, e.ctx, ref_aux_fi, launch_aux_fi));
    e.outs.commit();
    return kSuccess;
  });
}

}  // extern "C"
