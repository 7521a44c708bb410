// The problems behind the 12 entry points as plain structs of pointers and sizes, already validated by the
// API layer. Each has a CPU reference (reference_*.cc) and a CUDA launcher (kernels_*.cu) taking the same
// struct, so the two paths cannot drift apart in what they are given.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "common.h"
#include "device_error.h"

namespace tshmem_moe {

struct LaunchCtx {
  int device;
  int num_sms;  // grid sizing only: results never depend on it
  int max_smem_per_block;
  int cc_major;  // compute capability of the device
  cudaStream_t stream;
  DeviceError *err;
};

struct TopkGateArgs {
  const float *scores;
  int64_t T, E, K;
  int64_t *topk_idx;
};

struct TopkGroupArgs {
  const float *scores;
  int64_t T, G, Epg, num_topk_sum, num_topk_groups;
  int64_t *group_idx;
};

struct Top2GateArgs {
  const float *logits;
  const float *bias;
  int64_t T, R, K, S;  // S = shared slots actually emitted (0 unless use_shared_as_routed)
  int64_t num_topk_groups, num_groups;
  float routed_scaling_factor;
  int64_t ep_rank, num_ep_ranks, tp_rank, num_tp_ranks;
  int scoring;                      // tshmem_moe_scoring_func_t
  const uint8_t *mask;              // [T] or NULL
  const uint8_t *fix_routing_mask;  // [T] or NULL
  const int32_t *to_physical_map;   // [R+S_, D] or NULL
  const int32_t *logical_count;     // [R+S_] or NULL
  int64_t D;                        // columns of the map (num_extra_experts + 1), 1 without a map
  int64_t *unmapped;                // [T, K] with row stride, or NULL
  int64_t unmapped_row_stride;
  int64_t *topk_idx;    // [T, K+S]
  float *topk_weights;  // [T, K+S]
};

struct GroupCountArgs {
  const int64_t *idx;
  int64_t n;  // T * K
  int64_t G;
  int32_t *counts;
};

struct AuxFiArgs {
  const int64_t *idx;
  int64_t T, K, E, num_aux_topk;
  float *fi;
};

struct NormalizeArgs {
  const float *w;
  int64_t T, K;
  float *den;
  float *out;
};

struct MaskTpArgs {
  const void *in;
  void *out;
  bool is64;
  int64_t numel, n, num_ep_ranks, tp_rank, num_tp_ranks;
};

struct UniqueArgs {
  int64_t *idx;
  int64_t T, K, num_groups;
};

// Slots (T * K) and rows (P) of get_fused_mapping: int32 positions, with headroom for the kernel's 32-bit
// loop strides (a step never passes INT32_MAX).
constexpr int64_t kMappingIndexLimit = INT32_MAX - 4096;

struct MappingArgs {
  const int64_t *idx;
  int64_t T, K, E, P, alignment;  // P = length of the pos_to_* arrays
  int32_t *pos_to_expert;
  int32_t *pos_to_token;
  int32_t *pos_to_token_topk;
  int32_t *token_topk_to_pos;
  int32_t *expert_start;
  int32_t *expert_end;
  int32_t *num_tokens_per_expert;
  int64_t *total;  // if not NULL: receives sum of aligned counts (device memory on the GPU path)
};

struct ExpandArgs {
  const void *x;
  int64_t T, H, esize;  // element size in bytes
  const int32_t *pos;   // [T, K]
  int64_t K;
  const int32_t *pos_to_expert;  // [P]
  int64_t P;
  void *out;  // [P, H]
  // with sf (x_sf == NULL: plain expand)
  const uint32_t *x_sf;  // [T, hsf] 4-byte words (fp32 or packed int32), row-major
  int64_t hsf;
  bool col_major;  // sf_out element (p, j) at j * P4 + p, else p * hsf + j
  int64_t P4;
  uint32_t *sf_out;
};

struct ReduceArgs {
  const void *x;  // [P, H] fp32 or bf16
  bool x_bf16;
  int64_t P, H;
  const float *x_sf;   // [P] or NULL
  const float *w;      // [T, K] or NULL
  const int32_t *pos;  // [T, K]
  int64_t T, K;
  const float *sf;  // [1] or NULL
  tshmem_moe_dtype_t out_dtype;
  void *out;
};

// CPU references (spec semantics; bit-exact where the spec says bitwise). Value violations return
// INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_topk_gate(const TopkGateArgs &a);
Status ref_topk_group(const TopkGroupArgs &a);
Status ref_top2_sum_gate(const Top2GateArgs &a);
Status ref_group_count(const GroupCountArgs &a);
Status ref_aux_fi(const AuxFiArgs &a);
Status ref_normalize_weight(const NormalizeArgs &a);
Status ref_mask_indices_by_tp(const MaskTpArgs &a);
Status ref_unique(const UniqueArgs &a);
Status ref_get_fused_mapping(const MappingArgs &a);
Status ref_expand(const ExpandArgs &a);
Status ref_reduce_fused(const ReduceArgs &a);

// CUDA launchers: enqueue on ctx.stream; value violations go to ctx.err.
Status launch_topk_gate(const TopkGateArgs &a, const LaunchCtx &c);
Status launch_topk_group(const TopkGroupArgs &a, const LaunchCtx &c);
Status launch_top2_sum_gate(const Top2GateArgs &a, const LaunchCtx &c);
Status launch_group_count(const GroupCountArgs &a, const LaunchCtx &c);
Status launch_aux_fi(const AuxFiArgs &a, const LaunchCtx &c);
Status launch_normalize_weight(const NormalizeArgs &a, const LaunchCtx &c);
Status launch_mask_indices_by_tp(const MaskTpArgs &a, const LaunchCtx &c);
Status launch_unique(const UniqueArgs &a, const LaunchCtx &c);
Status launch_get_fused_mapping(const MappingArgs &a, const LaunchCtx &c);
Status launch_expand(const ExpandArgs &a, const LaunchCtx &c);
Status launch_reduce_fused(const ReduceArgs &a, const LaunchCtx &c);

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

// The EP/TP masking transform of spec §10 (and §7.2 step 9), shared by host and device code, in the integer
// type I (the results agree for every I that holds the operands; v1 below is never negative), dividing
// through `div` (TpDivide, or a kernel's precomputed multiply-high divisions).
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
