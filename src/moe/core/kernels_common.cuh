// Device helpers shared by the families' kernels: warp arg-max with the ties-to-the-smaller-index rule,
// multiply-high division by launch constants, grid sizing.
#pragma once

#include <climits>
#include <cstdint>

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

// n / d for n < 2^31 by a multiply-high and a shift: mul = ceil(2^(31 + l) / d) with 2^l >= d, so
// n * mul / 2^(31 + l) = n / d + n * err / (d * 2^(31 + l)) with err < d, and the error term stays below 1/d:
// exact. d == 1 is mul == 0.
struct FastDiv31 {
  uint32_t mul = 0, shr = 0;

  static FastDiv31 make(uint32_t d) {
    FastDiv31 f;
    if (d < 2) return f;
    uint32_t l = 0;
    while ((1ull << l) < d) ++l;
    f.mul = static_cast<uint32_t>(((1ull << (31 + l)) + d - 1) / d);
    f.shr = l - 1;
    return f;
  }
  __host__ __device__ uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t high = __umulhi(n, mul);
#else
    const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(n) * mul) >> 32);
#endif
    return mul ? high >> shr : n;
  }
};

// The three divisions of the 32-bit EP/TP transform (mask_by_tp_32 in core/tp_mask.h) by launch constants, precomputed
// for tp_fits_32(per_gpu, tp_rank, num_tp_ranks): every divisor, and every dividend there (v, v / per_gpu and
// v - tp_rank * per_gpu <= v, for ids v < 2^31), is below 2^31.
struct TpFastDivide {
  FastDiv31 gpu, tp, dp;
  static TpFastDivide make(uint32_t per_gpu, uint32_t num_tp_ranks) {
    return {FastDiv31::make(per_gpu), FastDiv31::make(num_tp_ranks), FastDiv31::make(per_gpu * num_tp_ranks)};
  }
  __host__ __device__ uint32_t by_gpu(uint32_t n) const { return gpu.div(n); }
  __host__ __device__ uint32_t by_tp(uint32_t n) const { return tp.div(n); }
  __host__ __device__ uint32_t by_dp(uint32_t n) const { return dp.div(n); }
};

inline unsigned grid_for(int64_t work, int64_t per_block, int64_t cap) {
  int64_t g = (work + per_block - 1) / per_block;
  if (g > cap) g = cap;
  if (g < 1) g = 1;
  return static_cast<unsigned>(g);
}

}  // namespace tshmem_moe
