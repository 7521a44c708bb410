// CUDA kernels of the gating entry points (spec §5-§7): one warp per token, scores held in registers (lane l
// holds experts l, l+32, ...). Every top-k is a sequence of REDUX rounds over order-preserving integer keys
// (max key, then the smallest index holding it), so the result equals a stable descending sort with true
// removal; each lane caches its best and second-best remaining slot and rescans only when both were taken.
#include <cmath>

#include "kernels_common.cuh"

namespace tshmem_moe {
namespace {

constexpr int kWarps = 4;  // tokens per 128-thread block

// Order-preserving unsigned key of a score: a > b (as floats) iff key(a) > key(b), and -0 == +0 map to one
// key (x + 0.0f turns -0 into +0), so a key maximum with ties to the smaller index is exactly the spec's
// "larger value, ties to the smaller index". 0 is reserved for "no candidate" (a removed or padding slot);
// only the all-ones NaN would map there and is lifted to 1 (NaN is undefined by the spec; we stay in range).
__device__ __forceinline__ unsigned order_key(float x) {
  const unsigned b = __float_as_uint(x + 0.0f);
  const unsigned k = b ^ (static_cast<unsigned>(static_cast<int>(b) >> 31) | 0x80000000u);
  return k > 1u ? k : 1u;
}

// Inverse of order_key for real keys; key 0 ("none") gives -inf, like an empty running maximum.
__device__ __forceinline__ float key_value(unsigned k) {
  if (k == 0u) return kNegInf;
  return __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
}

// A lane's two best remaining slots (slot i holds expert lane + 32 i): ties to the smaller slot, hence to the
// smaller expert. Slots with bit i of `taken` set, and padding slots (key 0), are never chosen.
template <int VPL>
struct LaneBest {
  unsigned k1, k2;
  int s1, s2;
  float p1, p2;  // payload of the two slots (top2_sum_gate's unbiased score)

  __device__ __forceinline__ void scan(const unsigned (&key)[VPL], const float (&pay)[VPL], unsigned taken) {
    k1 = 0u, k2 = 0u, s1 = 0, s2 = 0, p1 = 0.0f, p2 = 0.0f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const unsigned k = ((taken >> i) & 1u) ? 0u : key[i];
      if (k > k1) {
        k2 = k1, s2 = s1, p2 = p1;
        k1 = k, s1 = i, p1 = pay[i];
      } else if (k > k2) {
        k2 = k, s2 = i, p2 = pay[i];
      }
    }
  }
};

// One selection round over the warp: two single-instruction warp reductions (REDUX) find the best key and,
// among the lanes holding it, the smallest expert index. Every lane returns the winner; the winning lane
// retires its slot and promotes its second best (rescanning only when that was already used).
template <int VPL>
__device__ __forceinline__ int select_round(LaneBest<VPL> &lb, bool &have2, unsigned &taken, const unsigned (&key)[VPL],
                                            const float (&pay)[VPL], int lane) {
  const unsigned m = __reduce_max_sync(kFullMask, lb.k1);
  const unsigned cand = lb.k1 == m ? static_cast<unsigned>(lane + 32 * lb.s1) : 0xffffffffu;
  const int w = static_cast<int>(__reduce_min_sync(kFullMask, cand));
  if (lane == (w & 31)) {
    taken |= 1u << lb.s1;
    if (have2) {
      lb.k1 = lb.k2, lb.s1 = lb.s2, lb.p1 = lb.p2;
      have2 = false;
    } else {
      lb.scan(key, pay, taken);
      have2 = true;
    }
  }
  return w;
}

// VPL values per lane: lane l holds experts l, l+32, ... (coalesced loads), E <= 32 * VPL. Selection is K
// REDUX rounds over per-lane cached best/second-best keys: a few instructions per round, no shuffles.
template <int VPL>
__global__ void __launch_bounds__(kWarps * 32)
    topk_gate_kernel(const float *__restrict__ scores, int64_t T, int E, int K, int64_t *__restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  const float *row = scores + t * E;
  float x[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    const int j = lane + 32 * i;
    x[i] = j < E ? __ldg(row + j) : 0.0f;
  }
  unsigned key[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) key[i] = lane + 32 * i < E ? order_key(x[i]) : 0u;
  LaneBest<VPL> lb;
  unsigned taken = 0u;
  lb.scan(key, x, taken);
  bool have2 = true;
  int64_t *orow = out + t * K;
  int mine = 0;
  for (int r = 0; r < K; ++r) {
    const int w = select_round(lb, have2, taken, key, x, lane);
    if ((r & 31) == lane) mine = w;
    if ((r & 31) == 31 || r == K - 1) {  // flush 32 slots at a time, coalesced
      const int base = r & ~31;
      if (lane <= (r & 31)) orow[base + lane] = mine;
    }
  }
}

// L lanes per group (the largest power of two with G * L <= 32): each lane keeps the top-2 of its strided
// share of the group, the group's lanes merge them with xor shuffles (multiset top-2: max, and max of the min
// and the seconds), then each group leader counts the groups that beat it (G shuffles).
__global__ void __launch_bounds__(kWarps * 32)
    topk_group_kernel(const float *__restrict__ scores, int64_t T, int G, int L, int Epg, int nsum, int ntg,
                      int64_t *__restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  const int g = lane / L, q = lane - g * L;
  float t1 = kNegInf, t2 = kNegInf;
  if (g < G) {
    const float *grp = scores + (t * G + g) * Epg;
#pragma unroll 8
    for (int i = q; i < Epg; i += L) {
      const float x = __ldg(grp + i);
      if (x > t1) {
        t2 = t1;
        t1 = x;
      } else if (x > t2) {
        t2 = x;
      }
    }
  }
  for (int o = 1; o < L; o <<= 1) {
    const float o1 = __shfl_xor_sync(kFullMask, t1, o), o2 = __shfl_xor_sync(kFullMask, t2, o);
    const float n2 = fmaxf(fminf(t1, o1), fmaxf(t2, o2));
    t1 = fmaxf(t1, o1);
    t2 = n2;
  }
  const float s = nsum == 1 ? t1 : t1 + t2;
  int rank = 0;
  for (int h = 0; h < G; ++h) {
    const float sh = __shfl_sync(kFullMask, s, h * L);
    if (h != g && (sh > s || (sh == s && h < g))) ++rank;
  }
  if (g < G && q == 0 && rank < ntg) out[t * ntg + rank] = g;
}

struct Top2Params {
  Top2GateArgs a;
  int64_t per_rank;
};

__device__ __forceinline__ float score_fn(int scoring, float x) {
  if (scoring == TSHMEM_MOE_SCORING_SIGMOID) return 1.0f / (1.0f + expf(-x));
  return sqrtf(x > 20.0f ? x : log1pf(expf(x)));  // sqrtsoftplus
}

// One warp per token, VPL experts per lane (lane l holds l, l+32, ...): p (weights) and the ranking keys of b
// stay in registers. Group scores: per group one shared-memory key per lane (conflict-free) and REDUX top-2;
// group ranks in one pass; expert selection: REDUX rounds as topk_gate, the winner's p carried along. The
// arithmetic (scoring, softmax order, bias add, den accumulation, weights) is unchanged.
template <int VPL>
__global__ void __launch_bounds__(kWarps * 32) top2_sum_gate_kernel(const Top2Params prm, DeviceError *err) {
  extern __shared__ float smem[];
  const Top2GateArgs &a = prm.a;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (t >= a.T) return;
  const int R = static_cast<int>(a.R), K = static_cast<int>(a.K), KS = static_cast<int>(a.K + a.S);
  float *p_s = smem + warp * 2 * R;                         // p of fix-routing rows
  unsigned *key_s = reinterpret_cast<unsigned *>(p_s + R);  // ranking keys for the group scores
  int64_t *idx_row = a.topk_idx + t * KS;
  float *w_row = a.topk_weights + t * KS;
  int64_t *un_row = a.unmapped ? a.unmapped + t * a.unmapped_row_stride : nullptr;
  bool bad = a.mask && !a.mask[t];  // step 0: masked rows give -1 / 0
  float p[VPL];
  unsigned key[VPL];
  if (!bad) {
    const float *x = a.logits + t * R;
    float m = kNegInf;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int j = lane + 32 * i;
      p[i] = 0.0f;
      if (j < R) p[i] = __ldg(x + j);
    }
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int j = lane + 32 * i;
      if (j < R) {
        const float v = p[i];
        if (!isfinite(v)) {
          record_value_error(err, kErrNonFinite, static_cast<long long>(__float_as_uint(v)), t * R + j, R);
          bad = true;
        }
        m = fmaxf(m, v);
      }
    }
    bad = __any_sync(kFullMask, bad);  // a non-finite row is reported and written as masked
    if (!bad) {
      float b[VPL];
      if (a.scoring == TSHMEM_MOE_SCORING_SOFTMAX) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < VPL; ++i)
          if (lane + 32 * i < R) sum += expf(p[i] - m);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
#pragma unroll
        for (int i = 0; i < VPL; ++i) {
          const int j = lane + 32 * i;
          b[i] = 0.0f;
          if (j < R) {
            const float xv = p[i];
            p[i] = expf(xv - m) / sum;
            b[i] = xv + __ldg(a.bias + j);  // softmax ranks by the raw logit plus bias
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < VPL; ++i) {
          const int j = lane + 32 * i;
          b[i] = 0.0f;
          if (j < R) {
            const float pv = score_fn(a.scoring, p[i]);
            p[i] = pv;
            b[i] = pv + __ldg(a.bias + j);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < VPL; ++i) key[i] = lane + 32 * i < R ? order_key(b[i]) : 0u;
    }
  }
  if (bad) {
    if (lane < KS) idx_row[lane] = -1, w_row[lane] = 0.0f;
    if (un_row && lane < K) un_row[lane] = -1;
    return;
  }
  int my_sel = -1;
  float my_raw = 0.0f, den = 1e-20f;
  const bool fixed = a.fix_routing_mask && a.fix_routing_mask[t];
  if (fixed) {  // step 4: the given logical ids, in the given order
#pragma unroll
    for (int i = 0; i < VPL; ++i)
      if (lane + 32 * i < R) p_s[lane + 32 * i] = p[i];
    __syncwarp();
    if (lane < K) {
      const int64_t v = un_row[lane];
      if (v < 0 || v >= R)
        record_value_error(err, kErrFixRoutingIdx, v, t * K + lane, R);
      else
        my_sel = static_cast<int>(v), my_raw = p_s[v];
    }
    for (int k = 0; k < K; ++k) den += __shfl_sync(kFullMask, my_raw, k);
  } else {                                    // step 3
    if (a.num_groups != a.num_topk_groups) {  // group restriction by top-2 sum of b
      const int G = static_cast<int>(a.num_groups), ntg = static_cast<int>(a.num_topk_groups);
      const int epg = R / G;  // <= 32: a group holds at most one expert of each lane
#pragma unroll
      for (int i = 0; i < VPL; ++i)
        if (lane + 32 * i < R) key_s[lane + 32 * i] = key[i];
      __syncwarp();
      float my_s = 0.0f;
      int my_rank = 0;
      for (int g = 0; g < G; ++g) {
        const int lo = g * epg, off = (lane - lo) & 31;
        const unsigned k = off < epg ? key_s[lo + off] : 0u;
        const unsigned t1 = __reduce_max_sync(kFullMask, k);
        const unsigned dup = __ballot_sync(kFullMask, k == t1);
        const unsigned t2o = __reduce_max_sync(kFullMask, k == t1 ? 0u : k);
        const unsigned t2 = __popc(dup) >= 2 ? t1 : t2o;  // multiset: a repeated maximum is also the second
        const float sg = key_value(t1) + key_value(t2);
        // Group l < g beats g iff s_l >= s_g; g beats l iff s_g > s_l (ties to the lower group index).
        const bool earlier = lane < g;
        if (earlier && sg > my_s) ++my_rank;
        const unsigned beaten_by = __ballot_sync(kFullMask, earlier && (my_s > sg || my_s == sg));
        if (lane == g) my_s = sg, my_rank += __popc(beaten_by);
      }
      const unsigned groups = __ballot_sync(kFullMask, lane < G && my_rank < ntg);
      const unsigned inv = (65536u + static_cast<unsigned>(epg) - 1u) / static_cast<unsigned>(epg);
#pragma unroll
      for (int i = 0; i < VPL; ++i) {  // j / epg exactly, for j < 2048 and epg <= 32
        const unsigned gid = (static_cast<unsigned>(lane + 32 * i) * inv) >> 16;
        if (gid >= 32u || !((groups >> gid) & 1u)) key[i] = 0u;  // padding slots: gid may pass G
      }
    }
    LaneBest<VPL> lb;
    unsigned taken = 0u;
    lb.scan(key, p, taken);
    bool have2 = true;
    for (int r = 0; r < K; ++r) {
      const float raw_w = lb.p1;
      const int w = select_round(lb, have2, taken, key, p, lane);
      const float raw = __shfl_sync(kFullMask, raw_w, w & 31);  // p of the winner, from its lane
      den += raw;  // every lane accumulates the same sequence: slot order, fp32 RN
      if (lane == r) my_sel = w, my_raw = raw;
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

template <template <int> class Launch, class... Args>
void dispatch_vpl(int n, Args &&...args) {
  if (n <= 32)
    Launch<1>::run(args...);
  else if (n <= 64)
    Launch<2>::run(args...);
  else if (n <= 96)
    Launch<3>::run(args...);
  else if (n <= 128)
    Launch<4>::run(args...);
  else if (n <= 256)
    Launch<8>::run(args...);
  else if (n <= 512)
    Launch<16>::run(args...);
  else
    Launch<32>::run(args...);
}

template <int VPL>
struct TopkGateLaunch {
  static void run(const TopkGateArgs &a, const LaunchCtx &c, unsigned grid) {
    topk_gate_kernel<VPL>
        <<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, static_cast<int>(a.E), static_cast<int>(a.K), a.topk_idx);
  }
};

template <int VPL>
struct Top2Launch {
  static void run(const Top2Params &prm, const LaunchCtx &c, unsigned grid, size_t smem) {
    top2_sum_gate_kernel<VPL><<<grid, kWarps * 32, smem, c.stream>>>(prm, c.err);
  }
};

}  // namespace

Status launch_topk_gate(const TopkGateArgs &a, const LaunchCtx &c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  dispatch_vpl<TopkGateLaunch>(static_cast<int>(a.E), a, c, grid);
  return kSuccess;
}

Status launch_topk_group(const TopkGroupArgs &a, const LaunchCtx &c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  const int G = static_cast<int>(a.G);
  int L = 1;
  while (L * 2 * G <= 32) L *= 2;
  topk_group_kernel<<<grid, kWarps * 32, 0, c.stream>>>(a.scores, a.T, G, L, static_cast<int>(a.Epg),
                                                        static_cast<int>(a.num_topk_sum),
                                                        static_cast<int>(a.num_topk_groups), a.group_idx);
  return kSuccess;
}

Status launch_top2_sum_gate(const Top2GateArgs &a, const LaunchCtx &c) {
  const unsigned grid = static_cast<unsigned>((a.T + kWarps - 1) / kWarps);
  const size_t smem = static_cast<size_t>(kWarps) * 2 * static_cast<size_t>(a.R) * sizeof(float);
  Top2Params prm{a, (a.R + a.D - 1) / a.num_ep_ranks};
  dispatch_vpl<Top2Launch>(static_cast<int>(a.R), prm, c, grid, smem);
  return kSuccess;
}

}  // namespace tshmem_moe
