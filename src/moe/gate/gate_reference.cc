// CPU references of the gate family (docs/moe.md, "Gating"). Straightforward loops that read like the
// semantics; every top-k is a stable descending selection with true removal (ties to the smaller index).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/tp_mask.h"
#include "gate/gate.h"

namespace tshmem_moe {
namespace {

// Indices of the k largest of v[0..n) among `eligible` ones, descending, ties to the smaller index.
void stable_topk(const float *v, int64_t n, int64_t k, const std::vector<char> *eligible, int64_t *out) {
  std::vector<char> taken(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < k; ++r) {
    int64_t best = -1;
    for (int64_t j = 0; j < n; ++j) {
      if (taken[j] || (eligible && !(*eligible)[j])) continue;
      if (best < 0 || v[j] > v[best]) best = j;  // strict '>' keeps the smaller index on ties
    }
    out[r] = best;
    if (best >= 0) taken[best] = 1;
  }
}

// Top-1 or top-1 + top-2 (as a multiset) of v[0..n).
float group_score(const float *v, int64_t n, int64_t num_topk_sum) {
  const float ninf = -std::numeric_limits<float>::infinity();
  float t1 = ninf, t2 = ninf;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] > t1) {
      t2 = t1;
      t1 = v[i];
    } else if (v[i] > t2) {
      t2 = v[i];
    }
  }
  return num_topk_sum == 1 ? t1 : t1 + t2;
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

Status ref_topk_gate(const TopkGateArgs &a) {
  for (int64_t t = 0; t < a.T; ++t) stable_topk(a.scores + t * a.E, a.E, a.K, nullptr, a.topk_idx + t * a.K);
  return kSuccess;
}

Status ref_topk_group(const TopkGroupArgs &a) {
  std::vector<float> s(static_cast<size_t>(a.G));
  for (int64_t t = 0; t < a.T; ++t) {
    const float *row = a.scores + t * a.G * a.Epg;
    for (int64_t g = 0; g < a.G; ++g) s[g] = group_score(row + g * a.Epg, a.Epg, a.num_topk_sum);
    stable_topk(s.data(), a.G, a.num_topk_groups, nullptr, a.group_idx + t * a.num_topk_groups);
  }
  return kSuccess;
}

Status ref_top2_sum_gate(const Top2GateArgs &a) {
  const int64_t R = a.R, K = a.K, S = a.S, KS = K + S;
  const int64_t per_rank = (R + (a.D - 1)) / a.num_ep_ranks;
  std::vector<float> p(static_cast<size_t>(R)), b(static_cast<size_t>(R));
  std::vector<char> eligible(static_cast<size_t>(R));
  std::vector<int64_t> sel(static_cast<size_t>(K));
  std::vector<float> raw(static_cast<size_t>(K));
  const bool group_mode = a.num_groups != a.num_topk_groups;
  for (int64_t t = 0; t < a.T; ++t) {
    int64_t *idx_row = a.topk_idx + t * KS;
    float *w_row = a.topk_weights + t * KS;
    int64_t *un_row = a.unmapped ? a.unmapped + t * a.unmapped_row_stride : nullptr;
    if (a.mask && !a.mask[t]) {  // step 0
      for (int64_t s = 0; s < KS; ++s) idx_row[s] = -1, w_row[s] = 0.0f;
      if (un_row)
        for (int64_t k = 0; k < K; ++k) un_row[k] = -1;
      continue;
    }
    const float *x = a.logits + t * R;
    for (int64_t e = 0; e < R; ++e)
      if (!std::isfinite(x[e]))
        return fail(TSHMEM_MOE_ERR_INVALID_VALUE,
                    "tensor 'logits' holds a non-finite value at [%lld, %lld]; all values must be finite",
                    static_cast<long long>(t), static_cast<long long>(e));
    // Steps 1-2.
    if (a.scoring == TSHMEM_MOE_SCORING_SOFTMAX) {
      float m = x[0];
      for (int64_t e = 1; e < R; ++e) m = std::fmax(m, x[e]);
      float sum = 0.0f;
      for (int64_t e = 0; e < R; ++e) sum += std::exp(x[e] - m);
      for (int64_t e = 0; e < R; ++e) p[e] = std::exp(x[e] - m) / sum, b[e] = x[e] + a.bias[e];
    } else {
      for (int64_t e = 0; e < R; ++e) {
        p[e] = a.scoring == TSHMEM_MOE_SCORING_SIGMOID ? 1.0f / (1.0f + std::exp(-x[e])) : std::sqrt(softplus(x[e]));
        b[e] = p[e] + a.bias[e];
      }
    }
    const bool fixed = a.fix_routing_mask && a.fix_routing_mask[t];
    if (fixed) {  // step 4
      for (int64_t k = 0; k < K; ++k) {
        const int64_t v = un_row[k];
        if (v < 0 || v >= R)
          return fail(TSHMEM_MOE_ERR_INVALID_VALUE,
                      "tensor 'unmapped_topk_idx' holds %lld at [%lld, %lld] of a fix-routing row; it must be in "
                      "[0, %lld)",
                      static_cast<long long>(v), static_cast<long long>(t), static_cast<long long>(k),
                      static_cast<long long>(R));
        sel[k] = v;
      }
    } else {  // step 3
      std::fill(eligible.begin(), eligible.end(), 1);
      if (group_mode) {
        const int64_t G = a.num_groups, Epg = R / G;
        std::vector<float> gs(static_cast<size_t>(G));
        std::vector<int64_t> top(static_cast<size_t>(a.num_topk_groups));
        for (int64_t g = 0; g < G; ++g) gs[g] = group_score(b.data() + g * Epg, Epg, 2);
        stable_topk(gs.data(), G, a.num_topk_groups, nullptr, top.data());
        std::fill(eligible.begin(), eligible.end(), 0);
        for (int64_t g : top)
          for (int64_t e = g * Epg; e < (g + 1) * Epg; ++e) eligible[e] = 1;
      }
      stable_topk(b.data(), R, K, &eligible, sel.data());
    }
    // Step 5: sequential sum seeded with 1e-20, then division and scaling.
    float den = 1e-20f;
    for (int64_t k = 0; k < K; ++k) raw[k] = p[sel[k]], den += raw[k];
    for (int64_t k = 0; k < K; ++k) w_row[k] = (raw[k] / den) * a.routed_scaling_factor;
    if (un_row)
      for (int64_t k = 0; k < K; ++k) un_row[k] = sel[k];  // step 6
    for (int64_t s = 0; s < KS; ++s) {
      int64_t id = s < K ? sel[s] : R + (s - K);  // step 7
      if (s >= K) w_row[s] = 1.0f;
      if (a.to_physical_map) {  // step 8, 64-bit replica arithmetic
        const int64_t cnt = a.logical_count[id];
        if (cnt < 1 || cnt > a.D)
          return fail(TSHMEM_MOE_ERR_INVALID_VALUE,
                      "tensor 'logical_count' holds %lld at [%lld]; it must be in [1, %lld]",
                      static_cast<long long>(cnt), static_cast<long long>(id), static_cast<long long>(a.D));
        const int64_t dup = (a.ep_rank + t * 23333) % cnt;
        id = a.to_physical_map[id * a.D + dup];
      }
      idx_row[s] = mask_by_tp(id, per_rank, a.tp_rank, a.num_tp_ranks);  // step 9
    }
  }
  return kSuccess;
}

}  // namespace tshmem_moe
