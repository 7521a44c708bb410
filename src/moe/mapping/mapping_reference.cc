// CPU references of the mapping family (docs/moe.md, "The fused layout"): get_fused_mapping in the canonical
// order (ascending flat slot inside each expert segment) and both expands.
#include <cstring>
#include <vector>

#include "mapping/mapping.h"

namespace tshmem_moe {

Status ref_get_fused_mapping(const MappingArgs &a) {
  const int64_t n = a.T * a.K;
  std::vector<int64_t> count(static_cast<size_t>(a.E), 0);
  for (int64_t f = 0; f < n; ++f) {
    const int64_t v = a.idx[f];
    if (v < -1 || v >= a.E) return range_error("topk_idx", v, f, "entries must be in [-1, num_experts)");
    if (v >= 0) ++count[v];
  }
  std::vector<int64_t> next(static_cast<size_t>(a.E));
  int64_t start = 0;
  for (int64_t e = 0; e < a.E; ++e) {
    const int64_t aligned = align_up(count[e], a.alignment);
    a.expert_start[e] = static_cast<int32_t>(start);
    a.expert_end[e] = static_cast<int32_t>(start + aligned);
    a.num_tokens_per_expert[e] = static_cast<int32_t>(aligned);
    next[e] = start;
    start += aligned;
  }
  if (a.total) *a.total = start;
  if (start > a.P)
    return fail(TSHMEM_MOE_ERR_INVALID_VALUE,
                "num_expanded_tokens = %lld but the aligned per-expert counts sum to %lld; it must be >= that sum",
                static_cast<long long>(a.P), static_cast<long long>(start));
  for (int64_t p = 0; p < a.P; ++p) a.pos_to_expert[p] = a.pos_to_token[p] = a.pos_to_token_topk[p] = -1;
  for (int64_t f = 0; f < n; ++f) {  // ascending f: the canonical order inside each segment
    const int64_t e = a.idx[f];
    if (e < 0) {
      a.token_topk_to_pos[f] = -1;
      continue;
    }
    const int64_t p = next[e]++;
    a.token_topk_to_pos[f] = static_cast<int32_t>(p);
    a.pos_to_expert[p] = static_cast<int32_t>(e);
    a.pos_to_token[p] = static_cast<int32_t>(f / a.K);
    a.pos_to_token_topk[p] = static_cast<int32_t>(f);
  }
  return kSuccess;
}

Status ref_expand(const ExpandArgs &a) {
  const size_t row = static_cast<size_t>(a.H * a.esize);
  auto *out = static_cast<unsigned char *>(a.out);
  for (int64_t f = 0; f < a.T * a.K; ++f) {
    const int64_t q = a.pos[f];
    if (q < -1 || q >= a.P) return range_error("token_topk_to_pos", q, f, "entries must be in [-1, P)");
  }
  for (int64_t p = 0; p < a.P; ++p) {
    if (a.pos_to_expert[p] >= 0) continue;
    std::memset(out + static_cast<size_t>(p) * row, 0, row);
    for (int64_t j = 0; a.sf_out && j < a.hsf; ++j) a.sf_out[a.col_major ? j * a.P4 + p : p * a.hsf + j] = 0u;
  }
  for (int64_t t = 0; t < a.T; ++t) {
    for (int64_t k = 0; k < a.K; ++k) {
      const int64_t q = a.pos[t * a.K + k];
      if (q < 0) continue;
      std::memcpy(out + static_cast<size_t>(q) * row,
                  static_cast<const unsigned char *>(a.x) + static_cast<size_t>(t) * row, row);
      for (int64_t j = 0; a.sf_out && j < a.hsf; ++j)
        a.sf_out[a.col_major ? j * a.P4 + q : q * a.hsf + j] = a.x_sf[t * a.hsf + j];
    }
  }
  return kSuccess;
}

}  // namespace tshmem_moe
