// Entry points of the gate family (docs/moe.md, "Gating"): argument rules, then dispatch.
#include "core/entry.h"
#include "gate/gate.h"

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_topk_gate(const tshmem_moe_tensor_t *scores, int64_t num_topk,
                                                        tshmem_moe_tensor_t *topk_idx, cudaStream_t stream) {
  return guarded("tshmem_moe_topk_gate", [&]() -> Status {
    MOE_TRY(check_input(scores, "scores", {TSHMEM_MOE_FLOAT32}, 2, true));
    const int64_t T = scores->shape[0], E = scores->shape[1];
    MOE_REQUIRE(num_topk >= 1 && num_topk <= E, "num_topk = %" PRId64 " with E = %" PRId64 "; it must be in [1, E]",
                num_topk, E);
    MOE_LIMIT(E <= 1024, "scores has E = %" PRId64 " experts; this port supports E <= 1024", E);
    Entry e(scores->device, stream, "scores");
    MOE_TRY(e.enter());
    const int64_t shape[2] = {T, num_topk};
    MOE_TRY(e.outs.prepare(topk_idx, "topk_idx", TSHMEM_MOE_INT64, 2, shape));
    if (T > 0) {
      TopkGateArgs a{static_cast<const float *>(scores->data), T, E, num_topk, static_cast<int64_t *>(topk_idx->data)};
      MOE_TRY(execute(a, e.ctx, ref_topk_gate, launch_topk_gate));
    }
    e.outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_topk_sum_and_topk_group_idx(const tshmem_moe_tensor_t *scores,
                                                                          int64_t num_topk_sum, int64_t num_topk_groups,
                                                                          tshmem_moe_tensor_t *group_idx,
                                                                          cudaStream_t stream) {
  return guarded("tshmem_moe_topk_sum_and_topk_group_idx", [&]() -> Status {
    MOE_TRY(check_input(scores, "scores", {TSHMEM_MOE_FLOAT32}, 3, true));
    const int64_t T = scores->shape[0], G = scores->shape[1], Epg = scores->shape[2];
    MOE_REQUIRE(num_topk_sum == 1 || num_topk_sum == 2, "num_topk_sum = %" PRId64 "; it must be 1 or 2", num_topk_sum);
    MOE_REQUIRE(num_topk_sum <= Epg,
                "num_topk_sum = %" PRId64 " exceeds the %" PRId64 " experts per group (scores.shape[2])", num_topk_sum,
                Epg);
    MOE_REQUIRE(num_topk_groups >= 0 && num_topk_groups <= G,
                "num_topk_groups = %" PRId64 " with %" PRId64 " groups; it must be in [0, G]", num_topk_groups, G);
    MOE_LIMIT(G <= 32, "scores has G = %" PRId64 " groups; the kernel serves one group per warp lane (G <= 32)", G);
    Entry e(scores->device, stream, "scores");
    MOE_TRY(e.enter());
    const int64_t shape[2] = {T, num_topk_groups};
    MOE_TRY(e.outs.prepare(group_idx, "group_idx", TSHMEM_MOE_INT64, 2, shape));
    if (T > 0 && num_topk_groups > 0) {
      TopkGroupArgs a{static_cast<const float *>(scores->data), T, G, Epg, num_topk_sum, num_topk_groups,
                      static_cast<int64_t *>(group_idx->data)};
      MOE_TRY(execute(a, e.ctx, ref_topk_group, launch_topk_group));
    }
    e.outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t
tshmem_moe_top2_sum_gate(const tshmem_moe_tensor_t *logits, const tshmem_moe_tensor_t *bias,
                         const tshmem_moe_top2_sum_gate_params_t *params, const tshmem_moe_tensor_t *mask,
                         const tshmem_moe_tensor_t *fix_routing_mask, const tshmem_moe_tensor_t *to_physical_map,
                         const tshmem_moe_tensor_t *logical_count, tshmem_moe_tensor_t *unmapped_topk_idx,
                         tshmem_moe_tensor_t *topk_idx, tshmem_moe_tensor_t *topk_weights, cudaStream_t stream) {
  return guarded("tshmem_moe_top2_sum_gate", [&]() -> Status {
    MOE_TRY(check_input(logits, "logits", {TSHMEM_MOE_FLOAT32}, 2, true));
    const int dev = logits->device;
    const int64_t T = logits->shape[0], R = logits->shape[1];
    MOE_TRY(check_secondary(bias, "bias", {TSHMEM_MOE_FLOAT32}, 1, true, dev, "logits"));
    MOE_TRY(check_dim(*bias, "bias", 0, R, "num_routed_experts = logits.shape[1]"));
    MOE_REQUIRE(params != nullptr, "params is NULL");
    const tshmem_moe_top2_sum_gate_params_t &p = *params;
    MOE_REQUIRE(p.scoring_func == TSHMEM_MOE_SCORING_SIGMOID || p.scoring_func == TSHMEM_MOE_SCORING_SQRTSOFTPLUS ||
                    p.scoring_func == TSHMEM_MOE_SCORING_SOFTMAX,
                "scoring_func = %d; it must be sigmoid, sqrtsoftplus or softmax (identity is rejected)",
                static_cast<int>(p.scoring_func));
    const int64_t K = p.num_topk;
    MOE_REQUIRE(K >= 1 && K <= R, "num_topk = %" PRId64 " with R = %" PRId64 " routed experts; it must be in [1, R]", K,
                R);
    MOE_REQUIRE((p.num_topk_groups == 0) == (p.num_groups == 0),
                "num_topk_groups = %" PRId64 ", num_groups = %" PRId64 "; both must be 0 or both non-zero",
                p.num_topk_groups, p.num_groups);
    MOE_REQUIRE(p.num_topk_groups >= 0 && p.num_topk_groups <= p.num_groups,
                "num_topk_groups = %" PRId64 " must be in [0, num_groups = %" PRId64 "]", p.num_topk_groups,
                p.num_groups);
    if (p.num_groups != 0)
      MOE_REQUIRE(R % p.num_groups == 0, "R = %" PRId64 " must be divisible by num_groups = %" PRId64, R, p.num_groups);
    const bool group_mode = p.num_groups != p.num_topk_groups;
    if (group_mode) {
      MOE_LIMIT(p.num_groups <= 32 && R / p.num_groups <= 32,
                "group-limited routing needs num_groups <= 32 and R / num_groups <= 32 (got %" PRId64 ", %" PRId64 ")",
                p.num_groups, R / p.num_groups);
      MOE_REQUIRE(K <= p.num_topk_groups * (R / p.num_groups),
                  "num_topk = %" PRId64 " exceeds the %" PRId64 " experts of the %" PRId64 " selected groups", K,
                  p.num_topk_groups * (R / p.num_groups), p.num_topk_groups);
    }
    int64_t S = 0;
    if (p.use_shared_as_routed) {
      S = p.num_shared_experts;
      MOE_REQUIRE(S == 1 || S == 2, "num_shared_experts = %" PRId64 "; with use_shared_as_routed it must be 1 or 2", S);
      MOE_REQUIRE(K % S == 0, "num_topk = %" PRId64 " must be divisible by num_shared_experts = %" PRId64, K, S);
      MOE_REQUIRE(R % (K / S) == 0, "R = %" PRId64 " must be divisible by num_topk / num_shared_experts = %" PRId64, R,
                  K / S);
    }
    MOE_REQUIRE((to_physical_map == nullptr) == (logical_count == nullptr),
                "to_physical_map and logical_count must be given together");
    int64_t D = 1;
    if (to_physical_map) {
      MOE_TRY(check_secondary(to_physical_map, "to_physical_map", {TSHMEM_MOE_INT32}, 2, true, dev, "logits"));
      MOE_TRY(check_secondary(logical_count, "logical_count", {TSHMEM_MOE_INT32}, 1, true, dev, "logits"));
      D = to_physical_map->shape[1];
      MOE_REQUIRE(D >= 1, "to_physical_map has %" PRId64 " columns; it must have >= 1", D);
      MOE_REQUIRE(to_physical_map->shape[0] >= R + S, "to_physical_map has %" PRId64 " rows; it needs R + S = %" PRId64,
                  to_physical_map->shape[0], R + S);
      MOE_TRY(check_dim(*logical_count, "logical_count", 0, to_physical_map->shape[0], "to_physical_map.shape[0]"));
    }
    MOE_REQUIRE(S <= D - 1,
                "num_shared_experts = %" PRId64 " exceeds num_extra_experts = %" PRId64
                " (to_physical_map.shape[1] - 1); shared-as-routed needs a physical map with that many extra columns",
                S, D - 1);
    MOE_REQUIRE(p.num_ep_ranks >= 1 && p.ep_rank >= 0,
                "ep_rank = %" PRId64 ", num_ep_ranks = %" PRId64 " must satisfy ep_rank >= 0, num_ep_ranks >= 1",
                p.ep_rank, p.num_ep_ranks);
    MOE_REQUIRE(p.num_tp_ranks >= 1 && p.tp_rank >= 0 && p.tp_rank < p.num_tp_ranks,
                "tp_rank = %" PRId64 ", num_tp_ranks = %" PRId64 " must satisfy 0 <= tp_rank < num_tp_ranks", p.tp_rank,
                p.num_tp_ranks);
    MOE_REQUIRE((R + D - 1) / p.num_ep_ranks >= 1,
                "(R + num_extra_experts) / num_ep_ranks = 0: every EP rank must own at least one expert");
    MOE_TRY(check_optional(mask, "mask", {TSHMEM_MOE_BOOL}, -1, true, dev, "logits"));
    if (mask)
      MOE_REQUIRE(numel(*mask) == T, "mask has %" PRId64 " elements; it must have T = %" PRId64, numel(*mask), T);
    MOE_TRY(check_optional(fix_routing_mask, "fix_routing_mask", {TSHMEM_MOE_BOOL}, -1, true, dev, "logits"));
    if (fix_routing_mask) {
      MOE_REQUIRE(numel(*fix_routing_mask) == T, "fix_routing_mask has %" PRId64 " elements; it must have T = %" PRId64,
                  numel(*fix_routing_mask), T);
      MOE_REQUIRE(unmapped_topk_idx != nullptr, "fix_routing_mask requires unmapped_topk_idx (the fixed routes)");
    }
    int64_t un_stride = 0;
    if (unmapped_topk_idx) {
      MOE_TRY(check_secondary(unmapped_topk_idx, "unmapped_topk_idx", {TSHMEM_MOE_INT64}, 2, false, dev, "logits"));
      MOE_TRY(check_dim(*unmapped_topk_idx, "unmapped_topk_idx", 0, T, "T = logits.shape[0]"));
      MOE_TRY(check_dim(*unmapped_topk_idx, "unmapped_topk_idx", 1, K, "num_topk"));
      MOE_REQUIRE(K == 1 || unmapped_topk_idx->strides[1] == 1, "unmapped_topk_idx must have last-dim stride 1");
      un_stride = unmapped_topk_idx->strides[0];
      MOE_REQUIRE(T <= 1 || un_stride >= K, "unmapped_topk_idx row stride %" PRId64 " must be >= num_topk", un_stride);
    }
    MOE_LIMIT(R <= 1024, "R = %" PRId64 " routed experts; this port supports R <= 1024", R);
    MOE_LIMIT(K + S <= 32, "num_topk + shared slots = %" PRId64 "; the kernel supports <= 32", K + S);

    Entry e(dev, stream, "logits");
    MOE_TRY(e.enter());
    const int64_t shape[2] = {T, K + S};
    MOE_TRY(e.outs.prepare(topk_idx, "topk_idx", TSHMEM_MOE_INT64, 2, shape));
    MOE_TRY(e.outs.prepare(topk_weights, "topk_weights", TSHMEM_MOE_FLOAT32, 2, shape));
    if (T > 0) {
      Top2GateArgs a{};
      a.logits = static_cast<const float *>(logits->data);
      a.bias = static_cast<const float *>(bias->data);
      a.T = T, a.R = R, a.K = K, a.S = S;
      a.num_topk_groups = p.num_topk_groups, a.num_groups = p.num_groups;
      a.routed_scaling_factor = p.routed_scaling_factor;
      a.ep_rank = p.ep_rank, a.num_ep_ranks = p.num_ep_ranks, a.tp_rank = p.tp_rank, a.num_tp_ranks = p.num_tp_ranks;
      a.scoring = static_cast<int>(p.scoring_func);
      a.mask = mask ? static_cast<const uint8_t *>(mask->data) : nullptr;
      a.fix_routing_mask = fix_routing_mask ? static_cast<const uint8_t *>(fix_routing_mask->data) : nullptr;
      a.to_physical_map = to_physical_map ? static_cast<const int32_t *>(to_physical_map->data) : nullptr;
      a.logical_count = logical_count ? static_cast<const int32_t *>(logical_count->data) : nullptr;
      a.D = D;
      a.unmapped = unmapped_topk_idx ? static_cast<int64_t *>(unmapped_topk_idx->data) : nullptr;
      a.unmapped_row_stride = un_stride;
      a.topk_idx = static_cast<int64_t *>(topk_idx->data);
      a.topk_weights = static_cast<float *>(topk_weights->data);
      MOE_TRY(execute(a, e.ctx, ref_top2_sum_gate, launch_top2_sum_gate));
    }
    e.outs.commit();
    return kSuccess;
  });
}

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_scoring_func_parse(const char *name, tshmem_moe_scoring_func_t *func) {
  return guarded("tshmem_moe_scoring_func_parse", [&]() -> Status {
    MOE_REQUIRE(name != nullptr && func != nullptr, "name and func must not be NULL");
    static const char *const names[] = {"sigmoid", "sqrtsoftplus", "softmax", "identity"};
    for (int i = 0; i < 4; ++i) {
      const char *a = name;
      const char *b = names[i];
      while (*a && *b && (*a | 0x20) == *b) ++a, ++b;  // names are lower-case letters only
      if (*a == 0 && *b == 0) {
        *func = static_cast<tshmem_moe_scoring_func_t>(i);
        return kSuccess;
      }
    }
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT,
                "scoring function '%s' is unknown; use sigmoid, sqrtsoftplus, softmax or identity", name);
  });
}

}  // extern "C"
