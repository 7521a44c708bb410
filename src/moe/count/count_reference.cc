// CPU references of the count family (docs/moe.md, "Counting").
#include <cstring>
#include <vector>

#include "count/count.h"

namespace tshmem_moe {

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

}  // namespace tshmem_moe
