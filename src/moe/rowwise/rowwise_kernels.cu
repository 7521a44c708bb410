// CUDA kernels of the rowwise family (docs/moe.md, "Row-wise transforms of a top-k result"): normalize_weight,
// mask_indices_by_tp and inplace_unique_group_indices. Each token's row is transformed on its own, one thread per
// token or per 16 bytes, with the row's loads issued before any is used; where rows are short and 16-byte aligned,
// a block or a warp stages a contiguous span of rows in shared memory with 16-byte loads.
#include "core/kernels_common.cuh"
#include "core/tp_mask.h"
#include "rowwise/rowwise.h"

namespace tshmem_moe {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    normalize_kernel(const float *__restrict__ w, int64_t T, int K, float *__restrict__ den, float *__restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const float *row = w + t * K;
  float d = 1e-20f;
  for (int k = 0; k < K; ++k) d = d + __ldg(row + k);
  den[t] = d;
  for (int k = 0; k < K; ++k) out[t * K + k] = __ldg(row + k) / d;  // IEEE division, not a reciprocal
}

// normalize_weight for K <= kNormalizeDirectK: one thread per token, its K loads issued together, no shared
// memory and no barrier (the tile kernel below paid 1.88 µs against TileKernels' 1.42 at T = 8131 K = 2).
constexpr int kNormalizeDirectK = 4;
constexpr int kNormalizeDirectThreads = 128;

__global__ void __launch_bounds__(kNormalizeDirectThreads)
    normalize_direct_kernel(const float *__restrict__ w, int64_t T, int K, float *__restrict__ den,
                            float *__restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  float x[kNormalizeDirectK];
#pragma unroll
  for (int k = 0; k < kNormalizeDirectK; ++k) x[k] = k < K ? __ldg(w + t * K + k) : 0.0f;
  float d = 1e-20f;
#pragma unroll
  for (int k = 0; k < kNormalizeDirectK; ++k)
    if (k < K) d = d + x[k];
  den[t] = d;
#pragma unroll
  for (int k = 0; k < kNormalizeDirectK; ++k)
    if (k < K) out[t * K + k] = x[k] / d;  // IEEE division, not a reciprocal
}

// normalize_weight for K = 1, 2, 4 or 8 known at compile time, rows aligned to their vector (4 K bytes, at most
// 16): one thread per token, the row in one vector load (two of 16 bytes at K = 8) and one vector store, the
// sum and the divisions unrolled (TileKernels' K is a compile-time constant: 1.41 µs at T = 8131 K = 2 against
// the run-time-K kernel above's 1.54; a K-templated kernel measured 1.47 in round E). The same arithmetic:
// 1e-20f seed, sequential sum, IEEE division.
template <int K>
struct NormalizeVec;
template <>
struct NormalizeVec<1> {
  using type = float;
};
template <>
struct NormalizeVec<2> {
  using type = float2;
};
template <>
struct NormalizeVec<4> {
  using type = float4;
};
template <>
struct NormalizeVec<8> {
  using type = float4;  // two per row
};

template <int K>
__global__ void __launch_bounds__(kNormalizeDirectThreads)
    normalize_fixed_kernel(const float *__restrict__ w, int64_t T, float *__restrict__ den, float *__restrict__ out) {
  using V = typename NormalizeVec<K>::type;
  constexpr int kVecs = static_cast<int>(K * sizeof(float) / sizeof(V));
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  float x[K];
  V q[kVecs];
#pragma unroll
  for (int i = 0; i < kVecs; ++i) q[i] = __ldg(reinterpret_cast<const V *>(w + t * K) + i);
  memcpy(x, q, sizeof x);
  float d = 1e-20f;
#pragma unroll
  for (int k = 0; k < K; ++k) d = d + x[k];
  den[t] = d;
#pragma unroll
  for (int k = 0; k < K; ++k) x[k] = x[k] / d;  // IEEE division, not a reciprocal
  memcpy(q, x, sizeof x);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) reinterpret_cast<V *>(out + t * K)[i] = q[i];
}

// normalize_weight for 16-byte aligned rows of kNormalizeDirectK < K <= kNormalizeMaxK: a block stages the weights of
// its kNormalizeTokens tokens (one contiguous span of tokens * K floats) in shared memory with 16-byte loads, all
// issued before any use (one memory round trip per block, instead of K dependent loads per thread), each
// thread normalises its token there (the same arithmetic: 1e-20f seed, sequential sum, IEEE division), and the
// block writes the span back with 16-byte stores. A span starts at token * K floats, 16-byte aligned when the
// base is (kNormalizeTokens * K * 4 is a multiple of 16).
constexpr int kNormalizeTokens = 128;
constexpr int kNormalizeMaxK = 64;  // 32 KiB of shared memory per block

__global__ void __launch_bounds__(kNormalizeTokens)
    normalize_tile_kernel(const float *__restrict__ w, int64_t T, int K, float *__restrict__ den,
                          float *__restrict__ out) {
  extern __shared__ float tile[];
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kNormalizeTokens;
  const int tokens = static_cast<int>(T - t0 < kNormalizeTokens ? T - t0 : kNormalizeTokens);
  const int n = tokens * K, n4 = n / 4;
  const float4 *src4 = reinterpret_cast<const float4 *>(w + t0 * K);
  constexpr int U = 4;  // loads in flight per thread before the first shared-memory store (K = 9: 2.25 needed)
  for (int i0 = threadIdx.x; i0 < n4; i0 += U * kNormalizeTokens) {
    float4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i0 + u * kNormalizeTokens < n4) r[u] = __ldg(src4 + i0 + u * kNormalizeTokens);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i0 + u * kNormalizeTokens < n4) reinterpret_cast<float4 *>(tile)[i0 + u * kNormalizeTokens] = r[u];
  }
  for (int i = 4 * n4 + threadIdx.x; i < n; i += kNormalizeTokens) tile[i] = __ldg(w + t0 * K + i);
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < tokens) {
    float *row = tile + threadIdx.x * K;
    float d = 1e-20f;
    for (int k = 0; k < K; ++k) d = d + row[k];
    den[t0 + threadIdx.x] = d;
    for (int k = 0; k < K; ++k) row[k] = row[k] / d;  // IEEE division, not a reciprocal
  }
  __syncthreads();
  float4 *dst4 = reinterpret_cast<float4 *>(out + t0 * K);
  for (int i = threadIdx.x; i < n4; i += kNormalizeTokens) dst4[i] = reinterpret_cast<const float4 *>(tile)[i];
  for (int i = 4 * n4 + threadIdx.x; i < n; i += kNormalizeTokens) out[t0 * K + i] = tile[i];
}

template <class I>
__global__ void __launch_bounds__(kThreads) mask_tp_kernel(const I *__restrict__ in, I *__restrict__ out, int64_t n,
                                                           int64_t per_gpu, int64_t tp_rank, int64_t num_tp) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<I>(mask_by_tp(static_cast<int64_t>(__ldg(in + i)), per_gpu, tp_rank, num_tp));
}

// mask_indices_by_tp for 16-byte aligned input and output, when 32 bits hold the transform (tp_fits_32): one
// 16-byte load and store per thread (2 int64 or 4 int32 ids), a grid that covers the tensor once (no grid-stride
// second round trip), divisions by multiply-high. Ids of 2^31 and above (int64 only) take the 64-bit transform.
template <class I>
__global__ void __launch_bounds__(kThreads)
    mask_tp_vec_kernel(const I *__restrict__ in, I *__restrict__ out, int64_t n, int64_t per_gpu, int64_t tp_rank,
                       int64_t num_tp, TpFastDivide div) {
  constexpr int V = 16 / sizeof(I);
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (i0 >= n) return;
  I v[V];
  if (i0 + V <= n) {
    const uint4 q = __ldg(reinterpret_cast<const uint4 *>(in + i0));
    memcpy(v, &q, sizeof q);
  } else {
    for (int u = 0; u < V; ++u) v[u] = i0 + u < n ? __ldg(in + i0 + u) : I(-1);
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const int64_t x = static_cast<int64_t>(v[u]);
    v[u] = static_cast<I>(x < 0             ? -1
                          : x <= 0x7fffffff ? mask_by_tp_32(x, per_gpu, tp_rank, num_tp, div)
                                            : mask_by_tp(x, per_gpu, tp_rank, num_tp));
  }
  if (i0 + V <= n) {
    uint4 q;
    memcpy(&q, v, sizeof q);
    *reinterpret_cast<uint4 *>(out + i0) = q;
  } else {
    for (int u = 0; u < V && i0 + u < n; ++u) out[i0 + u] = v[u];
  }
}

// Whether group g (in [0, 128)) is in the set of groups seen, two registers for [0, 64) and [64, 128); marks it.
__device__ __forceinline__ bool seen_before(int64_t g, unsigned long long &low, unsigned long long &high) {
  const unsigned long long bit = 1ull << (g & 63);
  const bool is_high = g >= 64;
  if ((is_high ? high : low) & bit) return true;
  if (is_high)
    high |= bit;
  else
    low |= bit;
  return false;
}

// inplace_unique_group_indices where unique_tile_kernel (below) does not apply: one thread per token; the row's ids
// are loaded kUniqueBatch at a time, all before any is examined (the loop with a store in it loaded them one round
// trip each), then later duplicates become -1 in slot order.
constexpr int kUniqueBatch = 16;

__global__ void __launch_bounds__(kThreads)
    unique_kernel(int64_t *idx, int64_t T, int K, int64_t bound, DeviceError *err) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  int64_t *row = idx + t * K;
  // Groups seen, [0, 64) and [64, 128) (bound <= 128): two registers, not an array indexed at run time (a stack).
  unsigned long long seen_low = 0, seen_high = 0;
  for (int k0 = 0; k0 < K; k0 += kUniqueBatch) {
    int64_t g[kUniqueBatch];
#pragma unroll
    for (int u = 0; u < kUniqueBatch; ++u) g[u] = k0 + u < K ? row[k0 + u] : -1;
#pragma unroll
    for (int u = 0; u < kUniqueBatch; ++u) {
      const int k = k0 + u;
      if (k >= K) break;
      if (g[u] < 0) continue;
      if (g[u] >= bound) {
        record_value_error(err, kErrUniqueRange, g[u], t * K + k, bound);
        continue;
      }
      if (seen_before(g[u], seen_low, seen_high)) row[k] = -1;
    }
  }
}

// inplace_unique_group_indices for 16-byte aligned ids and K <= kUniqueTileMaxK: each warp stages the rows of its
// 32 tokens (one contiguous span of 32 * K ids) in shared memory with 16-byte loads, all issued before any is used,
// each lane dedupes its token's row there, and the warp stores back the 16-byte words that changed. One thread per
// token reading its own row (unique_kernel) spends a load instruction per id whose 32 lanes touch 32 sectors: at
// T = 36007 K = 9 that is 9 times the L1 wavefronts of the span's coalesced loads. Warps share no data, so a warp
// barrier is all the staging needs.
constexpr int kUniqueTileThreads = 128;
constexpr int kUniqueTileWarps = kUniqueTileThreads / 32;
constexpr int kUniqueTileMaxK = 32;                    // 8 KiB of shared memory per warp
constexpr int kUniqueTileWords = kUniqueTileMaxK / 2;  // 16-byte words per lane at most (32 rows of K ids)

__global__ void __launch_bounds__(kUniqueTileThreads)
    unique_tile_kernel(int64_t *idx, int64_t T, int K, int64_t bound, DeviceError *err) {
  extern __shared__ int64_t unique_tile[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t t0 = (static_cast<int64_t>(blockIdx.x) * kUniqueTileWarps + warp) * 32;
  if (t0 >= T) return;  // warp-uniform
  const int tokens = static_cast<int>(T - t0 < 32 ? T - t0 : 32);
  const int n = tokens * K, n2 = n / 2;  // ids and whole 16-byte words of the warp's span
  int64_t *span = idx + t0 * K;          // 16-byte aligned: t0 * K * 8 is a multiple of 256
  int64_t *tile = unique_tile + static_cast<int64_t>(warp) * 32 * K;
  uint4 *span2 = reinterpret_cast<uint4 *>(span);
  uint4 *tile2 = reinterpret_cast<uint4 *>(tile);
  uint4 word[kUniqueTileWords] = {};
#pragma unroll
  for (int u = 0; u < kUniqueTileWords; ++u)
    if (lane + 32 * u < n2) word[u] = span2[lane + 32 * u];
  const int64_t odd = (n & 1) && lane == 0 ? span[n - 1] : -1;
#pragma unroll
  for (int u = 0; u < kUniqueTileWords; ++u)
    if (lane + 32 * u < n2) tile2[lane + 32 * u] = word[u];
  if ((n & 1) && lane == 0) tile[n - 1] = odd;
  __syncwarp();
  if (lane < tokens) {
    int64_t *row = tile + lane * K;
    unsigned long long seen_low = 0, seen_high = 0;  // groups [0, 64) and [64, 128) (bound <= 128)
    for (int k = 0; k < K; ++k) {
      const int64_t g = row[k];
      if (g < 0) continue;
      if (g >= bound) {
        record_value_error(err, kErrUniqueRange, g, (t0 + lane) * K + k, bound);
        continue;
      }
      if (seen_before(g, seen_low, seen_high)) row[k] = -1;
    }
  }
  __syncwarp();
#pragma unroll
  for (int u = 0; u < kUniqueTileWords; ++u)
    if (lane + 32 * u < n2) {
      const uint4 q = tile2[lane + 32 * u];
      if (q.x != word[u].x || q.y != word[u].y || q.z != word[u].z || q.w != word[u].w) span2[lane + 32 * u] = q;
    }
  if ((n & 1) && lane == 0 && tile[n - 1] != odd) span[n - 1] = tile[n - 1];
}

}  // namespace

template <int K>
void launch_normalize_fixed(const NormalizeArgs &a, const LaunchCtx &c) {
  const unsigned grid = grid_for(a.T, kNormalizeDirectThreads, INT32_MAX);
  normalize_fixed_kernel<K><<<grid, kNormalizeDirectThreads, 0, c.stream>>>(a.w, a.T, a.den, a.out);
}

Status launch_normalize_weight(const NormalizeArgs &a, const LaunchCtx &c) {
  // K = 1, 2, 4, 8 with rows aligned to their vector: the compile-time-K kernel.
  const uintptr_t vec_bytes = static_cast<uintptr_t>(a.K >= 4 ? 16 : 4 * a.K);
  const bool vec_aligned = ((reinterpret_cast<uintptr_t>(a.w) | reinterpret_cast<uintptr_t>(a.out)) % vec_bytes) == 0;
  if (vec_aligned) {
    switch (a.K) {
      case 1: launch_normalize_fixed<1>(a, c); return kSuccess;
      case 2: launch_normalize_fixed<2>(a, c); return kSuccess;
      case 4: launch_normalize_fixed<4>(a, c); return kSuccess;
      case 8: launch_normalize_fixed<8>(a, c); return kSuccess;
      default: break;
    }
  }
  if (a.K <= kNormalizeDirectK) {
    const unsigned grid = grid_for(a.T, kNormalizeDirectThreads, INT32_MAX);
    normalize_direct_kernel<<<grid, kNormalizeDirectThreads, 0, c.stream>>>(a.w, a.T, static_cast<int>(a.K), a.den,
                                                                            a.out);
    return kSuccess;
  }
  const bool aligned = (reinterpret_cast<uintptr_t>(a.w) | reinterpret_cast<uintptr_t>(a.out)) % 16 == 0;
  if (aligned && a.K <= kNormalizeMaxK) {
    const unsigned grid = grid_for(a.T, kNormalizeTokens, INT32_MAX);
    const size_t smem = static_cast<size_t>(kNormalizeTokens) * static_cast<size_t>(a.K) * sizeof(float);
    normalize_tile_kernel<<<grid, kNormalizeTokens, smem, c.stream>>>(a.w, a.T, static_cast<int>(a.K), a.den, a.out);
    return kSuccess;
  }
  const unsigned grid = grid_for(a.T, kThreads, INT32_MAX);
  normalize_kernel<<<grid, kThreads, 0, c.stream>>>(a.w, a.T, static_cast<int>(a.K), a.den, a.out);
  return kSuccess;
}

Status launch_mask_indices_by_tp(const MaskTpArgs &a, const LaunchCtx &c) {
  const int64_t per_gpu = a.n / a.num_ep_ranks;
  const bool aligned = (reinterpret_cast<uintptr_t>(a.in) | reinterpret_cast<uintptr_t>(a.out)) % 16 == 0;
  if (aligned && tp_fits_32(per_gpu, a.tp_rank, a.num_tp_ranks)) {
    const TpFastDivide div = TpFastDivide::make(static_cast<uint32_t>(per_gpu), static_cast<uint32_t>(a.num_tp_ranks));
    const int64_t per_thread = a.is64 ? 2 : 4;
    const unsigned grid = grid_for(a.numel, kThreads * per_thread, INT32_MAX);
    if (a.is64)
      mask_tp_vec_kernel<int64_t><<<grid, kThreads, 0, c.stream>>>(static_cast<const int64_t *>(a.in),
                                                                   static_cast<int64_t *>(a.out), a.numel, per_gpu,
                                                                   a.tp_rank, a.num_tp_ranks, div);
    else
      mask_tp_vec_kernel<int32_t><<<grid, kThreads, 0, c.stream>>>(static_cast<const int32_t *>(a.in),
                                                                   static_cast<int32_t *>(a.out), a.numel, per_gpu,
                                                                   a.tp_rank, a.num_tp_ranks, div);
    return kSuccess;
  }
  const unsigned grid = grid_for(a.numel, kThreads * 4, 8 * static_cast<int64_t>(c.num_sms));
  if (a.is64)
    mask_tp_kernel<int64_t><<<grid, kThreads, 0, c.stream>>>(
        static_cast<const int64_t *>(a.in), static_cast<int64_t *>(a.out), a.numel, per_gpu, a.tp_rank, a.num_tp_ranks);
  else
    mask_tp_kernel<int32_t><<<grid, kThreads, 0, c.stream>>>(
        static_cast<const int32_t *>(a.in), static_cast<int32_t *>(a.out), a.numel, per_gpu, a.tp_rank, a.num_tp_ranks);
  return kSuccess;
}

Status launch_unique(const UniqueArgs &a, const LaunchCtx &c) {
  if (reinterpret_cast<uintptr_t>(a.idx) % 16 == 0 && a.K <= kUniqueTileMaxK) {
    const unsigned grid = grid_for(a.T, kUniqueTileThreads, INT32_MAX);
    const size_t smem = static_cast<size_t>(kUniqueTileThreads) * static_cast<size_t>(a.K) * sizeof(int64_t);
    unique_tile_kernel<<<grid, kUniqueTileThreads, smem, c.stream>>>(a.idx, a.T, static_cast<int>(a.K),
                                                                     align_up(a.num_groups, 64), c.err);
    return kSuccess;
  }
  const unsigned grid = grid_for(a.T, kThreads, INT32_MAX);
  unique_kernel<<<grid, kThreads, 0, c.stream>>>(a.idx, a.T, static_cast<int>(a.K), align_up(a.num_groups, 64), c.err);
  return kSuccess;
}

}  // namespace tshmem_moe
