// CPU reference of combine: every received row returns to its home PE (src_pe, src_idx of the dispatch) and the
// rows of one token are summed there in ascending PE order in fp32, then bias0 and bias1 are added, then one
// rounding to bf16. The GPU kernel computes the same operations in the same order: equal bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "dispatch/dispatch_reference.h"

namespace tshmem_ep {

/// One PE's combine input: a bf16 row per received row (in the dispatch's order) and optional weights.
struct PeCombineIn {
  std::vector<uint16_t> x;          // [num_recv, hidden]
  std::vector<float> topk_weights;  // [num_recv, num_topk] or empty
  std::vector<uint16_t> bias0;      // [num_tokens, hidden] or empty (the home PE's)
  std::vector<uint16_t> bias1;      // [num_tokens, hidden] or empty
};

struct PeCombined {
  std::vector<uint16_t> x;          // [num_tokens, hidden]
  std::vector<float> topk_weights;  // [num_tokens, num_topk] (when weights were given)
};

/// num_tokens[p]: PE p's token count; recv[p]: what PE p received (reference_dispatch); num_topk: weights per row
/// (0: no weights are combined).
Status reference_combine(const std::vector<int64_t> &num_tokens, const std::vector<PeReceived> &recv,
                         const std::vector<PeCombineIn> &in, int64_t hidden, int64_t num_topk,
                         std::vector<PeCombined> *out);

}  // namespace tshmem_ep
