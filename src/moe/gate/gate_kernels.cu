// CUDA kernels of the gate family (docs/moe.md, "Gating"): one warp per token, scores held in registers (lane l
// holds experts l, l+32, ...). Every top-k is a sequence of REDUX rounds over order-preserving integer keys
// (max key, then the smallest index holding it), so the result equals a stable descending sort with true
// removal; each lane caches its best and second-best remaining slot and rescans only when both were taken.
#include <cmath>

#include "core/kernels_common.cuh"
#include "core/tp_mask.h"
#include "gate/gate.h"

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

// Inverse of order_key for real keys (k != 0): flip the sign bit of a positive value's key, every bit of a
// negative one's (a shift and one three-input logic op).
__device__ __forceinline__ float real_key_value(unsigned k) {
  return __uint_as_float(k ^ (static_cast<unsigned>(static_cast<int>(~k) >> 31) | 0x80000000u));
}

// Inverse of order_key; key 0 ("none") gives -inf, like an empty running maximum.
__device__ __forceinline__ float key_value(unsigned k) { return k == 0u ? kNegInf : real_key_value(k); }

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
  bool tp32;  ///< tp_fits_32 for this launch: ids below 2^31 take the 32-bit transform through tp_div
  TpFastDivide tp_div;
};

Top2Params make_top2_params(const Top2GateArgs &a) {
  Top2Params prm{};
  prm.a = a;
  prm.per_rank = (a.R + a.D - 1) / a.num_ep_ranks;
  prm.tp32 = tp_fits_32(prm.per_rank, a.tp_rank, a.num_tp_ranks);
  if (prm.tp32) {
    prm.tp_div = TpFastDivide::make(static_cast<uint32_t>(prm.per_rank), static_cast<uint32_t>(a.num_tp_ranks));
  }
  return prm;
}

// mask_by_tp(v, per_rank, tp_rank, num_tp_ranks), bit for bit: the same formula, its divisions as multiply-high.
__device__ __forceinline__ int64_t mask_by_tp_fast(int64_t v, const Top2Params &prm) {
  if (v < 0) return -1;
  if (!prm.tp32 || v > 0x7fffffff) return mask_by_tp(v, prm.per_rank, prm.a.tp_rank, prm.a.num_tp_ranks);
  return mask_by_tp_32(v, prm.per_rank, prm.a.tp_rank, prm.a.num_tp_ranks, prm.tp_div);
}

// Warp-uniform OR of a per-lane value: REDUX results live in uniform registers, so the compiler knows branches
// on them keep the warp converged and emits no divergence fallbacks at the warp collectives that follow.
__device__ __forceinline__ unsigned warp_or(unsigned v) { return __reduce_or_sync(kFullMask, v); }

// Top-1 + top-2 of one key per lane as a multiset (a repeated maximum is also the second), as the float sum.
// kFull: every lane holds a real key, so neither is "none" (without it an empty second counts as -inf).
template <bool kFull>
__device__ __forceinline__ float warp_top2_sum(unsigned k) {
  const unsigned t1 = __reduce_max_sync(kFullMask, k);
  const unsigned dup = __ballot_sync(kFullMask, k == t1);
  const unsigned t2o = __reduce_max_sync(kFullMask, k == t1 ? 0u : k);
  const unsigned t2 = __popc(dup) >= 2 ? t1 : t2o;
  return kFull ? real_key_value(t1) + real_key_value(t2) : key_value(t1) + key_value(t2);
}

// Step 3a: zero the keys of the experts outside the ntg best groups (group score: multiset top-2 sum of b;
// group l beats g iff s_l > s_g, or s_l == s_g and l < g). R % G == 0 and epg = R / G <= 32.
template <int VPL>
__device__ __forceinline__ void restrict_to_groups(unsigned (&key)[VPL], int R, int G, int ntg, int lane,
                                                   unsigned *key_s) {
  unsigned groups;
  if (R == 32 * G) {
    // epg 32: group g is slot g of every lane, so its score comes straight from the registers (G <= VPL;
    // a padding slot past G holds only key 0 and scores NaN, which no comparison below counts). Lane g
    // ranks group g against all the others.
    float s[VPL], my_s = 0.0f;
#pragma unroll
    for (int g = 0; g < VPL; ++g) {
      s[g] = warp_top2_sum<true>(key[g]);
      if (lane == g) my_s = s[g];
    }
    int rank = 0;
#pragma unroll
    for (int h = 0; h < VPL; ++h) rank += (s[h] > my_s) | ((h < lane) & (s[h] == my_s));
    groups = __ballot_sync(kFullMask, lane < G && rank < ntg);
#pragma unroll
    for (int i = 0; i < VPL; ++i)
      if (!(groups & (1u << i))) key[i] = 0u;
    return;
  }
  // General epg: per group one shared-memory key per lane (conflict-free) and the same REDUX top-2.
  const int epg = R / G;
#pragma unroll
  for (int i = 0; i < VPL; ++i)
    if (lane + 32 * i < R) key_s[lane + 32 * i] = key[i];
  __syncwarp();
  float my_s = 0.0f;
  int my_rank = 0;
  for (int g = 0; g < G; ++g) {
    const int lo = g * epg, off = (lane - lo) & 31;
    const float sg = warp_top2_sum<false>(off < epg ? key_s[lo + off] : 0u);
    // Group l < g beats g iff s_l >= s_g; g beats l iff s_g > s_l (ties to the lower group index).
    const bool earlier = lane < g;
    if (earlier && sg > my_s) ++my_rank;
    const unsigned beaten_by = __ballot_sync(kFullMask, earlier && (my_s > sg || my_s == sg));
    if (lane == g) my_s = sg, my_rank += __popc(beaten_by);
  }
  groups = __ballot_sync(kFullMask, lane < G && my_rank < ntg);
  const unsigned inv = (65536u + static_cast<unsigned>(epg) - 1u) / static_cast<unsigned>(epg);
#pragma unroll
  for (int i = 0; i < VPL; ++i) {  // j / epg exactly, for j < 2048 and epg <= 32
    const unsigned gid = (static_cast<unsigned>(lane + 32 * i) * inv) >> 16;
    if (gid >= 32u || !((groups >> gid) & 1u)) key[i] = 0u;  // padding slots: gid may pass G
  }
}

// A lane's two best remaining slots by key, ties to the smaller slot (= the smaller expert); key 0 is never
// eligible. Selection takes experts in the order (key desc, expert asc), so when a lane's best is taken, every
// slot of the lane before it in that order is taken too: a rescan needs only the taken slot as a threshold,
// no record of what was taken.
template <int VPL>
struct LaneTop2 {
  unsigned k1, k2;  // keys; k2 == 0: no cached second (none left, or already promoted)
  unsigned e1, e2;  // their experts, lane + 32 * slot

  // kAll: the best two of all slots; otherwise of the slots after (kl, sl) in the selection order.
  template <bool kAll>
  __device__ __forceinline__ void scan(const unsigned (&key)[VPL], int lane, unsigned kl, int sl) {
    unsigned b1 = 0u, b2 = 0u;
    int s1 = 0, s2 = 0;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      // Bitwise, not short-circuit: a select, not a branch per slot.
      const bool after = kAll | (key[i] < kl) | ((key[i] == kl) & (i > sl));
      const unsigned k = after ? key[i] : 0u;
      if (k > b1) {
        b2 = b1, s2 = s1;
        b1 = k, s1 = i;
      } else if (k > b2) {
        b2 = k, s2 = i;
      }
    }
    k1 = b1, k2 = b2;
    e1 = static_cast<unsigned>(lane + 32 * s1), e2 = static_cast<unsigned>(lane + 32 * s2);
  }
};

// Steps 1-2 for the element-wise scoring functions: one straight-line loop per function (the choice is made
// once per warp). Padding slots are scored too (their input is 0); their keys are 0 and they are never read.
template <int VPL, class F>
__device__ __forceinline__ void score_elementwise(float (&p)[VPL], float (&b)[VPL], const float (&bias)[VPL], F f) {
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    p[i] = f(p[i]);
    b[i] = p[i] + bias[i];
  }
}

// One warp per token, VPL experts per lane (lane l holds l, l+32, ...): logits, bias and ranking keys stay in
// registers, p goes to shared memory once (read by index: fix routing, and each selection round's winner).
// Group scores: REDUX top-2 per group (from registers when a group is one slot of every lane), ranks in one
// pass. Expert selection: per round two REDUX (best key, then smallest expert holding it) over each lane's
// cached best two. The arithmetic (scoring, softmax order, bias add, den accumulation in slot order, weights)
// is that of the reference. Control flow that reaches warp collectives branches only on kernel arguments and
// REDUX results, both warp-uniform to the compiler.
// Up to VPL 8, registers are capped for 12 resident blocks per SM (40 instead of 48 at VPL 8, for a couple
// of spilled words): more warps to issue from in this issue-bound kernel, and fewer waves.
template <int VPL>
__global__ void __launch_bounds__(kWarps * 32, VPL <= 8 ? 12 : 1)
    top2_sum_gate_kernel(const Top2Params prm, DeviceError *err) {
  extern __shared__ float smem[];
  const Top2GateArgs &a = prm.a;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (t >= a.T) return;
  const int R = static_cast<int>(a.R), K = static_cast<int>(a.K), KS = static_cast<int>(a.K + a.S);
  float *p_s = smem + warp * 2 * 32 * VPL;                         // p of the row, padding slots included
  unsigned *key_s = reinterpret_cast<unsigned *>(p_s + 32 * VPL);  // ranking keys for general group scores
  // Every load that does not depend on another is issued here, before any of them is used: the mask and
  // fix-routing flags, the logits row and the bias (a masked row's logits are read and ignored). One memory
  // round trip instead of four in a row.
  const bool masked_l = a.mask && !a.mask[t];
  const bool fixed_l = a.fix_routing_mask && a.fix_routing_mask[t];
  const float *xl = a.logits + t * R + lane, *bl = a.bias + lane;
  const int room = R - lane;  // slot i is a real expert iff 32 * i < room
  float p[VPL], bias[VPL];
  if (R == 32 * VPL) {  // no padding (uniform branch): plain loads at constant offsets
#pragma unroll
    for (int i = 0; i < VPL; ++i) p[i] = __ldg(xl + 32 * i), bias[i] = __ldg(bl + 32 * i);
  } else {
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      p[i] = 0.0f, bias[i] = 0.0f;
      if (32 * i < room) p[i] = __ldg(xl + 32 * i), bias[i] = __ldg(bl + 32 * i);
    }
  }
  bool finite = true;  // padding slots hold 0
#pragma unroll
  for (int i = 0; i < VPL; ++i) finite &= isfinite(p[i]);
  // One REDUX makes the three row flags warp-uniform (every lane read the same flags).
  const unsigned flags = warp_or((masked_l ? 1u : 0u) | (finite ? 0u : 2u) | (fixed_l ? 4u : 0u));
  if (flags & 3u) {  // step 0: masked rows, and non-finite rows (reported), give -1 / 0
    if (!(flags & 1u)) {
#pragma unroll
      for (int i = 0; i < VPL; ++i) {
        const int j = lane + 32 * i;
        if (32 * i < room && !isfinite(p[i]))
          record_value_error(err, kErrNonFinite, static_cast<long long>(__float_as_uint(p[i])), t * R + j, R);
      }
    }
    int64_t *un_row = a.unmapped ? a.unmapped + t * a.unmapped_row_stride : nullptr;
    if (lane < KS) a.topk_idx[t * KS + lane] = -1, a.topk_weights[t * KS + lane] = 0.0f;
    if (un_row && lane < K) un_row[lane] = -1;
    return;
  }
  float b[VPL];
  if (a.scoring == TSHMEM_MOE_SCORING_SOFTMAX) {
    float m = kNegInf;
#pragma unroll
    for (int i = 0; i < VPL; ++i) m = fmaxf(m, 32 * i < room ? p[i] : kNegInf);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
    float e[VPL], sum = 0.0f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      e[i] = expf(p[i] - m);
      if (32 * i < room) sum += e[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      b[i] = p[i] + bias[i];  // softmax ranks by the raw logit plus bias
      p[i] = e[i] / sum;
    }
  } else if (a.scoring == TSHMEM_MOE_SCORING_SIGMOID) {
    score_elementwise(p, b, bias, [](float v) { return 1.0f / (1.0f + expf(-v)); });
  } else {  // sqrtsoftplus
    score_elementwise(p, b, bias, [](float v) { return sqrtf(v > 20.0f ? v : log1pf(expf(v))); });
  }
  unsigned key[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    const unsigned k = order_key(b[i]);
    key[i] = 32 * i < room ? k : 0u;
    p_s[lane + 32 * i] = p[i];  // padding slots have room and are never read
  }
  __syncwarp();
  int my_sel = -1;
  float my_raw = 0.0f, den = 1e-20f;
  if (flags & 4u) {  // step 4: the given logical ids, in the given order
    if (lane < K) {
      const int64_t v = a.unmapped[t * a.unmapped_row_stride + lane];
      if (v < 0 || v >= R)
        record_value_error(err, kErrFixRoutingIdx, v, t * K + lane, R);
      else
        my_sel = static_cast<int>(v), my_raw = p_s[v];
    }
    for (int k = 0; k < K; ++k) den += __shfl_sync(kFullMask, my_raw, k);
  } else {  // step 3
    if (a.num_groups != a.num_topk_groups)
      restrict_to_groups(key, R, static_cast<int>(a.num_groups), static_cast<int>(a.num_topk_groups), lane, key_s);
    LaneTop2<VPL> c;
    c.template scan<true>(key, lane, 0u, 0);
    for (int r = 0; r < K; ++r) {
      const unsigned m = __reduce_max_sync(kFullMask, c.k1);
      // Smallest expert holding the best key. With no eligible expert left (K past the eligible count,
      // undefined by the spec) every lane offers its slot 0 and expert 0 comes out: in range all the same.
      const unsigned w = __reduce_min_sync(kFullMask, c.k1 == m ? c.e1 : 0xffffffffu);
      den += p_s[w];  // every lane accumulates the same sequence: slot order, fp32 RN
      if (lane == r) my_sel = static_cast<int>(w);
      // The winning lane promotes its second (selects, no branch); only when it had none does it rescan,
      // past the taken (m, slot of w): both warp-uniform, nothing to save beforehand.
      const bool win = c.e1 == w;
      c.k1 = win ? c.k2 : c.k1, c.e1 = win ? c.e2 : c.e1, c.k2 = win ? 0u : c.k2;
      if (win && c.k1 == 0u) c.template scan<false>(key, lane, m, static_cast<int>(w >> 5));
    }
    if (lane < K) my_raw = p_s[my_sel];
  }
  if (lane < KS) {
    int64_t id;
    float w;
    if (lane < K) {
      w = (my_raw / den) * a.routed_scaling_factor;
      id = my_sel;
      if (a.unmapped && my_sel >= 0) a.unmapped[t * a.unmapped_row_stride + lane] = my_sel;
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
        // 64-bit, as the reference; computed in 32 bits when that holds it (a short sequence on the GPU)
        const int64_t spread = a.ep_rank + t * 23333;
        const int64_t dup = spread <= 0xffffffffll && spread >= 0 && cnt <= 0xffffffffll
                                ? static_cast<int64_t>(static_cast<uint32_t>(spread) % static_cast<uint32_t>(cnt))
                                : spread % cnt;
        id = a.to_physical_map[id * a.D + dup];
      }
    }
    a.topk_idx[t * KS + lane] = mask_by_tp_fast(id, prm);
    a.topk_weights[t * KS + lane] = w;
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
  static void run(const Top2Params &prm, const LaunchCtx &c, unsigned grid) {
    const size_t smem = static_cast<size_t>(kWarps) * 2 * 32 * VPL * sizeof(float);  // p and keys, per warp
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
  const Top2Params prm = make_top2_params(a);
  dispatch_vpl<Top2Launch>(static_cast<int>(a.R), prm, c, grid);
  return kSuccess;
}

}  // namespace tshmem_moe
