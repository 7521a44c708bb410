// CPU reference of dispatch (dispatch/dispatch_reference.h).
#include "dispatch/dispatch_reference.h"

#include <cstring>

#include "core/rows.h"
#include "layout/layout.h"

namespace tshmem_ep {

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  // the canonical NaN __float2bfloat16_rn gives
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

Status reference_dispatch(const std::vector<PeTokens> &world, int64_t hidden, size_t x_elem_size, bool fp8,
                          int64_t num_topk, int64_t num_experts, int64_t expert_alignment,
                          std::vector<PeReceived> *out) {
  const int n = static_cast<int>(world.size());
  const int64_t local = num_experts / n;
  const size_t row = static_cast<size_t>(hidden) * x_elem_size;
  const size_t nscales = fp8 ? static_cast<size_t>(hidden / 128) : 0;
  std::vector<LayoutRef> layouts(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    const PeTokens &in = world[static_cast<size_t>(s)];
    EP_TRY(reference_layout(in.topk_idx.data(), in.num_tokens, num_topk, num_experts, n, 1,
                            &layouts[static_cast<size_t>(s)]));
  }
  out->assign(static_cast<size_t>(n), PeReceived{});
  for (int p = 0; p < n; ++p) {
    PeReceived &r = (*out)[static_cast<size_t>(p)];
    r.per_expert.assign(static_cast<size_t>(local), 0);
    for (int s = 0; s < n; ++s) {
      const PeTokens &in = world[static_cast<size_t>(s)];
      for (int64_t t = 0; t < in.num_tokens; ++t) {
        if (!layouts[static_cast<size_t>(s)].in_rank[static_cast<size_t>(t * n + p)]) continue;
        const uint8_t *xr = in.x.data() + static_cast<size_t>(t) * row;
        r.x.insert(r.x.end(), xr, xr + row);
        if (fp8) {
          const float *sc = in.scales.data() + static_cast<size_t>(t) * nscales;
          r.scales.insert(r.scales.end(), sc, sc + nscales);
        }
        for (int64_t k = 0; k < num_topk; ++k) {
          const int64_t e = in.topk_idx[static_cast<size_t>(t * num_topk + k)];
          const bool mine = e >= p * local && e < (p + 1) * local;
          r.topk_idx.push_back(mine ? e - p * local : -1);
          r.topk_weights.push_back(mine ? in.topk_weights[static_cast<size_t>(t * num_topk + k)] : 0.0f);
          if (mine) ++r.per_expert[static_cast<size_t>(e - p * local)];
        }
        r.src_pe.push_back(s);
        r.src_idx.push_back(static_cast<int32_t>(t));
        ++r.num_recv;
      }
    }
    for (int32_t &c : r.per_expert) c = static_cast<int32_t>(align_up(c, expert_alignment));
  }
  return kSuccess;
}

}  // namespace tshmem_ep
