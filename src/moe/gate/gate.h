// The gate family (docs/moe.md, "Gating"): topk_gate, topk_sum_and_topk_group_idx and top2_sum_gate. Each
// entry point's problem is a plain struct of pointers and sizes, validated by gate_api.cc; its CPU reference and
// its CUDA launcher take the same struct, so the two paths cannot drift apart in what they are given.
#pragma once

#include <cstdint>

#include "core/launch.h"
#include "core/status.h"

namespace tshmem_moe {

struct TopkGateArgs {
  const float *scores;
  int64_t T, E, K;
  int64_t *topk_idx;
};

struct TopkGroupArgs {
  const float *scores;
  int64_t T, G, Epg, num_topk_sum, num_topk_groups;
  int64_t *group_idx;
};

struct Top2GateArgs {
  const float *logits;
  const float *bias;
  int64_t T, R, K, S;  // S = shared slots actually emitted (0 unless use_shared_as_routed)
  int64_t num_topk_groups, num_groups;
  float routed_scaling_factor;
  int64_t ep_rank, num_ep_ranks, tp_rank, num_tp_ranks;
  int scoring;                      // tshmem_moe_scoring_func_t
  const uint8_t *mask;              // [T] or NULL
  const uint8_t *fix_routing_mask;  // [T] or NULL
  const int32_t *to_physical_map;   // [R+S_, D] or NULL
  const int32_t *logical_count;     // [R+S_] or NULL
  int64_t D;                        // columns of the map (num_extra_experts + 1), 1 without a map
  int64_t *unmapped;                // [T, K] with row stride, or NULL
  int64_t unmapped_row_stride;
  int64_t *topk_idx;    // [T, K+S]
  float *topk_weights;  // [T, K+S]
};

// CPU references (gate_reference.cc): the semantics of docs/moe.md, bit-exact where it says bitwise. A value
// violation returns INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_topk_gate(const TopkGateArgs &a);
Status ref_topk_group(const TopkGroupArgs &a);
Status ref_top2_sum_gate(const Top2GateArgs &a);

// CUDA launchers (gate_kernels.cu): enqueue on c.stream; value violations go to c.err.
Status launch_topk_gate(const TopkGateArgs &a, const LaunchCtx &c);
Status launch_topk_group(const TopkGroupArgs &a, const LaunchCtx &c);
Status launch_top2_sum_gate(const Top2GateArgs &a, const LaunchCtx &c);

}  // namespace tshmem_moe
