// Device helpers shared by the kernels: warp arg-max with the spec's tie rule, grid sizing.
#pragma once

#include <climits>
#include <cstdint>

#include "ops.h"

namespace tshmem_moe {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kNegInf = -__builtin_huge_valf();

// (v, i) beats (bv, bi): larger value, ties to the smaller index; an empty candidate (INT_MAX) always loses,
// so even NaN inputs yield distinct, in-range indices (the spec leaves NaN undefined; we keep it memory-safe).
__device__ __forceinline__ bool beats(float v, int i, float bv, int bi) {
  if (i == INT_MAX) return false;
  if (bi == INT_MAX) return true;
  return v > bv || (v == bv && i < bi);
}

// Butterfly arg-max over the warp; every lane ends with the same winner.
__device__ __forceinline__ void warp_argmax(float &v, int &i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(kFullMask, v, o);
    const int oi = __shfl_xor_sync(kFullMask, i, o);
    if (beats(ov, oi, v, i)) v = ov, i = oi;
  }
}

inline unsigned grid_for(int64_t work, int64_t per_block, int64_t cap) {
  int64_t g = (work + per_block - 1) / per_block;
  if (g > cap) g = cap;
  if (g < 1) g = 1;
  return static_cast<unsigned>(g);
}

}  // namespace tshmem_moe
