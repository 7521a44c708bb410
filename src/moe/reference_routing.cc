// CPU references of the counting, index and fused-layout entry points (spec §8-§16).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "numeric.h"
#include "ops.h"

namespace tshmem_moe {
namespace {

Status range_error(const char *tensor, int64_t value, int64_t pos, const char *rule) {
  return fail(TSHMEM_MOE_ERR_INVALID_VALUE, "tensor '%s' holds %lld at flat position %lld; %s", tensor,
              static_cast<long long>(value), static_cast<long long>(pos), rule);
}

}  // namespace

Status ref_group_count(const GroupCountArgs &a) {
  std::vector<int32_t> c(static_cast<size_t>(a.G), 0);
  for (int64_t f = 0; f < a.n; ++f) {
    const int64_t v = a.idx[f];
    if (v < -1 || v >= a.G) return range_error("group_idx", v, f, "entries must be in [-1, num_groups)");
    if (v >= 0) ++c[v];
  }
  std::memcpy(a.counts, c.data(), c.size() * sizeof(int32_t));
  return kSuccess;
}

Status ref_aux_fi(const AuxFiArgs &a) {
  std::vector<int64_t> c(static_cast<size_t>(a.E), 0);
  for (int64_t f = 0; f < a.T * a.K; ++f) {
    const int64_t v = a.idx[f];
    if (v < -1 || v >= a.E) return range_error("topk_idx", v, f, "entries must be in [-1, num_experts)");
    if (v >= 0) ++c[v];
  }
  const float den = static_cast<float>(a.T * a.num_aux_topk);
  for (int64_t e = 0; e < a.E; ++e)
    a.fi[e] = a.T == 0 ? 0.0f : (static_cast<float>(c[e]) * static_cast<float>(a.E)) / den;
  return kSuccess;
}

Status ref_normalize_weight(const NormalizeArgs &a) {
  for (int64_t t = 0; t < a.T; ++t) {
    const float *w = a.w + t * a.K;
    float d = 1e-20f;
    for (int64_t k = 0; k < a.K; ++k) d = d + w[k];
    a.den[t] = d;
    for (int64_t k = 0; k < a.K; ++k) a.out[t * a.K + k] = w[k] / d;
  }
  return kSuccess;
}

Status ref_mask_indices_by_tp(const MaskTpArgs &a) {
  const int64_t per_gpu = a.n / a.num_ep_ranks;
  for (int64_t i = 0; i < a.numel; ++i) {
    if (a.is64) {
      const int64_t v = static_cast<const int64_t *>(a.in)[i];
      static_cast<int64_t *>(a.out)[i] = mask_by_tp(v, per_gpu, a.tp_rank, a.num_tp_ranks);
    } else {
      const int64_t v = static_cast<const int32_t *>(a.in)[i];
      static_cast<int32_t *>(a.out)[i] = static_cast<int32_t>(mask_by_tp(v, per_gpu, a.tp_rank, a.num_tp_ranks));
    }
  }
  return kSuccess;
}

Status ref_unique(const UniqueArgs &a) {
  const int64_t bound = align_up(a.num_groups, 64);
  std::vector<char> seen(static_cast<size_t>(bound));
  for (int64_t t = 0; t < a.T; ++t) {
    std::fill(seen.begin(), seen.end(), 0);
    int64_t *row = a.idx + t * a.K;
    for (int64_t k = 0; k < a.K; ++k) {
      const int64_t g = row[k];
      if (g < 0) continue;
      if (g >= bound)
        return range_error("group_indices", g, t * a.K + k, "non-negative entries must be < align(num_groups, 64)");
      if (seen[g])
        row[k] = -1;
      else
        seen[g] = 1;
    }
  }
  return kSuccess;
}

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

Status ref_reduce_fused(const ReduceArgs &a) {
  for (int64_t f = 0; f < a.T * a.K; ++f) {
    const int64_t q = a.pos[f];
    if (q < -1 || q >= a.P) return range_error("token_topk_to_pos", q, f, "entries must be in [-1, P)");
  }
  std::vector<float> acc(static_cast<size_t>(a.H));
  for (int64_t t = 0; t < a.T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = 0; k < a.K; ++k) {
      const int64_t p = a.pos[t * a.K + k];
      if (p < 0) continue;
      float s = a.w ? a.w[t * a.K + k] : 1.0f;
      if (a.x_sf) s = s * a.x_sf[p];
      for (int64_t i = 0; i < a.H; ++i) {
        const float xv = a.x_bf16 ? bf16_to_f32(static_cast<const uint16_t *>(a.x)[p * a.H + i])
                                  : static_cast<const float *>(a.x)[p * a.H + i];
        acc[i] = std::fma(xv, s, acc[i]);
      }
    }
    for (int64_t i = 0; i < a.H; ++i) {
      const float v = a.sf ? acc[i] * a.sf[0] : acc[i];
      const int64_t o = t * a.H + i;
      switch (a.out_dtype) {
        case TSHMEM_MOE_FLOAT32: static_cast<float *>(a.out)[o] = v; break;
        case TSHMEM_MOE_BFLOAT16: static_cast<uint16_t *>(a.out)[o] = f32_to_bf16(v); break;
        case TSHMEM_MOE_FLOAT8_E4M3: static_cast<uint8_t *>(a.out)[o] = f32_to_e4m3_sat(v); break;
        case TSHMEM_MOE_BOOL:
        case TSHMEM_MOE_INT32:
        case TSHMEM_MOE_INT64:
        case TSHMEM_MOE_NUM_DTYPES:
          return fail(TSHMEM_MOE_ERR_INTERNAL, "reduce_fused reference reached output dtype %d",
                      static_cast<int>(a.out_dtype));
      }
    }
  }
  return kSuccess;
}

}  // namespace tshmem_moe
