// CPU reference of the dispatch layout (layout/layout.h).
#include "layout/layout.h"

#include <algorithm>

namespace tshmem_ep {

Status reference_layout(const int64_t *topk_idx, int64_t num_tokens, int64_t num_topk, int64_t num_experts, int n_pes,
                        int pes_per_node, LayoutRef *out) {
  const int64_t local = num_experts / n_pes;
  const int num_nodes = n_pes / pes_per_node;
  out->per_rank.assign(static_cast<size_t>(n_pes), 0);
  out->per_node.assign(static_cast<size_t>(num_nodes), 0);
  out->per_expert.assign(static_cast<size_t>(num_experts), 0);
  out->in_rank.assign(static_cast<size_t>(num_tokens * n_pes), 0);
  std::vector<uint8_t> node_seen(static_cast<size_t>(num_nodes));
  for (int64_t t = 0; t < num_tokens; ++t) {
    std::fill(node_seen.begin(), node_seen.end(), 0);
    for (int64_t k = 0; k < num_topk; ++k) {
      const int64_t e = topk_idx[t * num_topk + k];
      if (e < -1 || e >= num_experts)
        return fail(TSHMEM_EP_ERR_INVALID_VALUE,
                    "topk_idx holds %lld at flat position %lld; expert ids are in [-1, num_experts = %lld)",
                    static_cast<long long>(e), static_cast<long long>(t * num_topk + k),
                    static_cast<long long>(num_experts));
      if (e < 0) continue;
      ++out->per_expert[static_cast<size_t>(e)];
      const int64_t pe = e / local;
      uint8_t &in = out->in_rank[static_cast<size_t>(t * n_pes + pe)];
      if (!in) {
        in = 1;
        ++out->per_rank[static_cast<size_t>(pe)];
      }
      uint8_t &ns = node_seen[static_cast<size_t>(pe / pes_per_node)];
      if (!ns) {
        ns = 1;
        ++out->per_node[static_cast<size_t>(pe / pes_per_node)];
      }
    }
  }
  return kSuccess;
}

}  // namespace tshmem_ep
