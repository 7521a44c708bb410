// CPU reference of combine (combine/combine_reference.h).
#include "combine/combine_reference.h"

#include <algorithm>

namespace tshmem_ep {

Status reference_combine(const std::vector<int64_t> &num_tokens, const std::vector<PeReceived> &recv,
                         const std::vector<PeCombineIn> &in, int64_t hidden, int64_t num_topk,
                         std::vector<PeCombined> *out) {
  const int n = static_cast<int>(num_tokens.size());
  const size_t h = static_cast<size_t>(hidden), k = static_cast<size_t>(num_topk);
  // row_of[home][t * n + p]: the row of PE p that holds home's token t, or -1.
  std::vector<std::vector<int64_t>> row_of(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) row_of[static_cast<size_t>(s)].assign(static_cast<size_t>(num_tokens[s] * n), -1);
  for (int p = 0; p < n; ++p) {
    const PeReceived &r = recv[static_cast<size_t>(p)];
    for (int64_t j = 0; j < r.num_recv; ++j) {
      const size_t jj = static_cast<size_t>(j);
      row_of[static_cast<size_t>(r.src_pe[jj])][static_cast<size_t>(r.src_idx[jj]) * n + p] = j;
    }
  }
  out->assign(static_cast<size_t>(n), PeCombined{});
  for (int s = 0; s < n; ++s) {
    PeCombined &c = (*out)[static_cast<size_t>(s)];
    const size_t tokens = static_cast<size_t>(num_tokens[s]);
    const PeCombineIn &home = in[static_cast<size_t>(s)];
    const bool weights = num_topk > 0;
    c.x.assign(tokens * h, 0);
    if (weights) c.topk_weights.assign(tokens * k, 0.0f);
    std::vector<float> acc(h);
    std::vector<float> wacc(k);
    for (size_t t = 0; t < tokens; ++t) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(wacc.begin(), wacc.end(), 0.0f);
      for (int p = 0; p < n; ++p) {
        const int64_t j = row_of[static_cast<size_t>(s)][t * n + static_cast<size_t>(p)];
        if (j < 0) continue;
        const PeCombineIn &src = in[static_cast<size_t>(p)];
        for (size_t i = 0; i < h; ++i) acc[i] += bf16_to_float(src.x[static_cast<size_t>(j) * h + i]);
        if (weights)
          for (size_t q = 0; q < k; ++q) wacc[q] += src.topk_weights[static_cast<size_t>(j) * k + q];
      }
      for (size_t i = 0; i < h; ++i) {
        float v = acc[i];
        if (!home.bias0.empty()) v += bf16_to_float(home.bias0[t * h + i]);
        if (!home.bias1.empty()) v += bf16_to_float(home.bias1[t * h + i]);
        c.x[t * h + i] = float_to_bf16(v);
      }
      if (weights)
        for (size_t q = 0; q < k; ++q) c.topk_weights[t * k + q] = wacc[q];
    }
  }
  return kSuccess;
}

}  // namespace tshmem_ep
