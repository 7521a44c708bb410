// CPU references of the rowwise family (docs/moe.md, "Row-wise transforms of a top-k result").
#include <algorithm>
#include <vector>

#include "core/tp_mask.h"
#include "rowwise/rowwise.h"

namespace tshmem_moe {

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

}  // namespace tshmem_moe
