// CUDA kernels of the gating entry points (spec §5-§7): one warp per token, every top-k a warp arg-max with
// true removal (ties to the smaller index), so the result equals a stable descending sort.
#include <cmath>

#include "kernels_common.cuh"

namespace tshmem_moe {
namespace {

constexpr int kWarps = 4;  // tokens per 128-thread block

// VPL values per lane: lane l holds experts l, l+32, ... (coalesced loads), E <= 32 * VPL.
template <int VPL>
__global__ void __launch_bounds__(kWarps * 32) topk_gate_kernel(const float* __restrict__ scores, int64_t T, int E,
                                                                  int K, int64_t* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  const float* row = scores + t * E;
  float v[VPL];
  unsigned present = 0;
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    const int j = lane + 32 * i;
    v[i] = kNegInf;
    if (j < E) v[i] = __ldg(row + j), present |= 1u << i;
  }
  int64_t* orow = out + t * K;
  int mine = 0;
  for (int r = 0; r < K; ++r) {
    float bv = kNegInf;
    int bi = INT_MAX;
#pragma unroll
    for (int i = 0; i < VPL; ++i)
      if (((present >> i) & 1u) && (bi == INT_MAX || v[i] > bv)) bv = v[i], bi = lane + 32 * i;
    warp_argmax(bv, bi);
    if ((bi & 31) == lane) present &= ~(1u << (bi >> 5));
    if ((r & 31) == lane) mine = bi;
    if ((r & 31) == 31 || r == K - 1) {  // flush 32 slots at a time, coalesced
      const int base = r & ~31;
      if (lane <= (r & 31)) orow[base + lane] = mine;
    }
  }
}

// One lane per group scores its group; each lane then counts the groups that beat it (G shuffles).
__global__ void __launch_bounds__(kWarps * 32) topk_group_kernel(const float* __restrict__ scores, int64_t T, int G,
                                                                   int Epg, int nsum, int ntg,
                                                                   int64_t* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  float s = kNegInf;
  if (lane < G) {
    const float* g = scores + (t * G + lane) * Epg;
    float t1 = kNegInf, t2 = kNegInf;
    for (int i = 0; i < Epg; ++i) {
      const float x = __ldg(g + i);
      if (x > t1) {
        t2 = t1;
        t1 = x;
      } else if (x > t2) {
        t2 = x;
      }
    }
    s = nsum == 1 ? t1 : t1 + t2;
  }
  int rank = 0;
  for (int h = 0; h < G; ++h) {
    const float sh = __shfl_sync(kFullMask, s, h);
    if (h != lane && (sh > s || (sh == s && h < lane))) ++rank;
  }
  if (lane < G && rank < ntg) out[t * ntg + rank] = lane;
}

struct Top2Params {
  Top2GateArgs a;
  int64_t per_rank;
};

__device__ __forceinline__ float score_fn(int scoring, float x) {
  if (scoring == TSHMEM_MOE_SCORING_SIGMOID) return 1.0f / (1.0f + expf(-x));
  return sqrtf(x > 20.0f ? x : log1pf(expf(x)));  // sqrtsoftplus
}

// One warp per token; p (weights) and b (ranking scores) of the token live in shared memory.
__global__ void __launch_bounds__(kWarps * 32) top2_sum_gate_kernel(const Top2Params prm, DeviceError* err) {
  extern __shared__ float smem[];
  const Top2GateArgs& a = prm.a;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (t >= a.T) return;
  const int R = static_cast<int>(a.R), K = static_cast<int>(a.K), KS = static_cast<int>(a.K + a.S);
  float* p = smem + warp * 2 * R;
  float* b = p + R;
  int64_t* idx_row = a.topk_idx + t * KS;
  float* w_row = a.topk_weights + t * KS;
  int64_t* un_row = a.unmapped ? a.unmapped + t * a.unmapped_row_stride : nullptr;
  bool bad = a.mask && !a.mask[t];  // step 0: masked rows give -1 / 0
  if (!bad) {
    const float* x = a.logits + t * R;
    float m = kNegInf;
    for (int j = lane; j < R; j += 32) {
      const float v = __ldg(x + j);
      if (!isfinite(v)) {
        record_value_error(err, kErrNonFinite, static_cast<long long>(__float_as_uint(v)), t * R + j, R);
        bad = true;
      }
      p[j] = v;
      m = fmaxf(m, v);
    }
    bad = __any_sync(kFullMask, bad);  // a non-finite row is reported and written as masked
    if (!bad) {
      if (a.scoring == TSHMEM_MOE_SCORING_SOFTMAX) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
        float sum = 0.0f;
        for (int j = lane; j < R; j += 32) sum += expf(p[j] - m);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
        for (int j = lane; j < R; j += 32) {
          const float xv = p[j];
          p[j] = expf(xv - m) / sum;
          b[j] = xv + __ldg(a.bias + j);  // softmax ranks by the raw logit plus bias
        }
      } else {
        for (int j = lane; j < R; j += 32) {
          const float pv = score_fn(a.scoring, p[j]);
          p[j] = pv;
          b[j] = pv + __ldg(a.bias + j);
        }
      }
    }
  }
  if (bad) {
    if (lane < KS) idx_row[lane] = -1, w_row[lane] = 0.0f;
    if (un_row && lane < K) un_row[lane] = -1;
    return;
  }
  __syncwarp();
  int my_sel = -1;
  float my_raw = 0.0f, den = 1e-20f;
  const bool fixed = a.fix_routing_mask && a.fix_routing_mask[t];
  if (fixed) {  // step 4: the given logical ids, in the given order
    if (lane < K) {
      const int64_t v = un_row[lane];
      if (v < 0 || v >= R)
        record_value_error(err, kErrFixRoutingIdx, v, t * K + lane, R);
      else
        my_sel = static_cast<int>(v), my_raw = p[v];
    }
    for (int k = 0; k < K; ++k) den += __shfl_sync(kFullMask, my_raw, k);
  } else {  // step 3
    unsigned present = 0;
    const int nper = (R + 31) / 32;
    unsigned groups = kFullMask;
    int epg = R;
    if (a.num_groups != a.num_topk_groups) {  // group restriction by top-2 sum of b
      const int G = static_cast<int>(a.num_groups);
      epg = R / G;
      float s = kNegInf;
      if (lane < G) {
        float t1 = kNegInf, t2 = kNegInf;
        for (int i = 0; i < epg; ++i) {
          const float x = b[lane * epg + i];
          if (x > t1) {
            t2 = t1;
            t1 = x;
          } else if (x > t2) {
            t2 = x;
          }
        }
        s = t1 + t2;
      }
      int rank = 0;
      for (int h = 0; h < G; ++h) {
        const float sh = __shfl_sync(kFullMask, s, h);
        if (h != lane && (sh > s || (sh == s && h < lane))) ++rank;
      }
      groups = __ballot_sync(kFullMask, lane < G && rank < a.num_topk_groups);
    }
    for (int i = 0; i < nper; ++i) {
      const int j = lane + 32 * i;
      if (j < R && ((groups >> (j / epg)) & 1u)) present |= 1u << i;
    }
    for (int r = 0; r < K; ++r) {
      float bv = kNegInf;
      int bi = INT_MAX;
      for (int i = 0; i < nper; ++i)
        if ((present >> i) & 1u) {
          const float v = b[lane + 32 * i];
          if (bi == INT_MAX || v > bv) bv = v, bi = lane + 32 * i;
        }
      warp_argmax(bv, bi);
      if ((bi & 31) == lane) present &= ~(1u << (bi >> 5));
      const float raw = p[bi];
      den += raw;  // every lane accumulates the same sequence: slot order, fp32 RN
      if (lane == r) my_sel = bi, my_raw = raw;
    }
  }
  if (lane < KS) {
    int64_t id;
    float w;
    if (lane < K) {
      w = (my_raw / den) * a.routed_scaling_factor;
      id = my_sel;
      if (un_row && my_sel >= 0) un_row[lane] = my_sel;
    } else {
      w = 1.0f;
      id = a.R + (lane - K);
    }
    if (id >= 0 && a.to_physical_map) {
      const int64_t cnt = a.logical_count[id];
      if (cnt < 1 || cnt > a.D) {
        record_value_error(err, kErrLogicalCount, cnt, id, a.D);
        id = -1;
      } else {
        const int64_t dup = (a.ep_rank + t * 23333) % cnt;  // 64-bit, as the reference
        id = a.to_physical_map[id * a.D + dup];
      }
    }
    idx_row[lane] = mask_by_tp(id, prm.per_rank, a.tp_rank, a.num_tp_ranks);
    w_row[lane] = w;
  }
}

}  // namespace

Status launch_topk_gate(const TopkGateArgs& a, const LaunchCtx& c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  const int E = static_cast<int>(a.E), K = static_cast<int>(a.K);
  if (E <= 32)
    topk_gate_kernel<1><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  else if (E <= 64)
    topk_gate_kernel<2><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  else if (E <= 128)
    topk_gate_kernel<4><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  else if (E <= 256)
    topk_gate_kernel<8><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  else if (E <= 512)
    topk_gate_kernel<16><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  else
    topk_gate_kernel<32><<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, E, K, a.topk_idx);
  return kSuccess;
}

Status launch_topk_group(const TopkGroupArgs& a, const LaunchCtx& c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  topk_group_kernel<<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, static_cast<int>(a.G), static_cast<int>(a.Epg),
                                                        static_cast<int>(a.num_topk_sum),
                                                        static_cast<int>(a.num_topk_groups), a.group_idx);
  return kSuccess;
}

Status launch_top2_sum_gate(const Top2GateArgs& a, const LaunchCtx& c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  const size_t smem = static_cast<size_t>(kWarps) * 2 * static_cast<size_t>(a.R) * sizeof(float);
  Top2Params prm{a, (a.R + a.D - 1) / a.num_ep_ranks};
  top2_sum_gate_kernel<<<grid, kWarps * 32, smem, c.stream>>>(prm, c.err);
  return kSuccess;
}

}  // namespace tshmem_moe
