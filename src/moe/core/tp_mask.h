// The EP/TP masking transform (docs/moe.md, mask_indices_by_tp), shared by host and device code: the rowwise
// family's mask_indices_by_tp and step 9 of the gate family's top2_sum_gate, references and kernels alike.
#pragma once

#include <cstdint>

namespace tshmem_moe {

#ifdef __CUDACC__
#define TSHMEM_MOE_HD __host__ __device__
#else
#define TSHMEM_MOE_HD
#endif

// Plain division by the three divisors of the EP/TP masking transform (below).
template <class I>
struct TpDivide {
  I per_gpu, num_tp_ranks;
  TSHMEM_MOE_HD I by_gpu(I n) const { return n / per_gpu; }
  TSHMEM_MOE_HD I by_tp(I n) const { return n / num_tp_ranks; }
  TSHMEM_MOE_HD I by_dp(I n) const { return n / (num_tp_ranks * per_gpu); }
};

// The EP/TP masking transform (mask_indices_by_tp; step 9 of top2_sum_gate) in the integer type I (the results
// agree for every I that holds the operands; v1 below is never negative), dividing through `div` (TpDivide, or a
// kernel's precomputed multiply-high divisions).
template <class I, class Div>
TSHMEM_MOE_HD inline I mask_by_tp_in(I v, I per_gpu, I tp_rank, I num_tp_ranks, const Div &div) {
  const I r = div.by_gpu(v);
  if (r - div.by_tp(r) * num_tp_ranks != tp_rank) return static_cast<I>(-1);  // (v / per_gpu) % num_tp_ranks
  const I per_dp = num_tp_ranks * per_gpu;
  const I v1 = v - tp_rank * per_gpu;  // >= 0: v / per_gpu >= tp_rank here
  return v1 - div.by_dp(v1) * (per_dp - per_gpu);
}

// True when 32 bits hold every operand of the transform for ids up to 2^31 - 1. 32-bit division is a few
// instructions on the GPU, 64-bit a long emulated sequence; this holds for every real expert count.
TSHMEM_MOE_HD inline bool tp_fits_32(int64_t per_gpu, int64_t tp_rank, int64_t num_tp_ranks) {
  constexpr int64_t kMax32 = 0x7fffffff;
  return num_tp_ranks >= 1 && per_gpu >= 1 && per_gpu <= kMax32 / num_tp_ranks && tp_rank <= kMax32;
}

// The transform in 32 bits, for 0 <= v <= 2^31 - 1 under tp_fits_32: -1 or the masked id.
template <class Div>
TSHMEM_MOE_HD inline int64_t mask_by_tp_32(int64_t v, int64_t per_gpu, int64_t tp_rank, int64_t num_tp_ranks,
                                           const Div &div) {
  const uint32_t r = mask_by_tp_in<uint32_t>(static_cast<uint32_t>(v), static_cast<uint32_t>(per_gpu),
                                             static_cast<uint32_t>(tp_rank), static_cast<uint32_t>(num_tp_ranks), div);
  return r == 0xffffffffu ? -1 : static_cast<int64_t>(r);
}

TSHMEM_MOE_HD inline int64_t mask_by_tp(int64_t v, int64_t per_gpu, int64_t tp_rank, int64_t num_tp_ranks) {
  if (v < 0) return -1;
  if (v <= 0x7fffffff && tp_fits_32(per_gpu, tp_rank, num_tp_ranks))
    return mask_by_tp_32(v, per_gpu, tp_rank, num_tp_ranks,
                         TpDivide<uint32_t>{static_cast<uint32_t>(per_gpu), static_cast<uint32_t>(num_tp_ranks)});
  return mask_by_tp_in<int64_t>(v, per_gpu, tp_rank, num_tp_ranks, TpDivide<int64_t>{per_gpu, num_tp_ranks});
}

}  // namespace tshmem_moe
