// CPU reference of the reduce family (docs/moe.md, "Reduction"): fmaf in slot order, then sf, then the cast.
#include <algorithm>
#include <cmath>
#include <vector>

#include "reduce/numeric.h"
#include "reduce/reduce.h"

namespace tshmem_moe {

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
