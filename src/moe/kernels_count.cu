// CUDA kernels of group_count, aux_fi, normalize_weight, mask_indices_by_tp and inplace_unique_group_indices
// (spec §8-§12). Counting is in integers, so results are exact and independent of the grid.
#include <cooperative_groups.h>

#include "device.h"
#include "kernels_common.cuh"

namespace cg = cooperative_groups;

namespace tshmem_moe {
namespace {

constexpr int kThreads = 256;

// Grid-stride count of idx[0..n) into `target` (shared or global int bins). Each thread takes pairs of entries
// f, f + stride, ... (stride = 2 x the grid's threads) kCountBatch pairs at a time, and issues all their loads
// (16 bytes each where the base is aligned and the batch lies inside n, else predicated 8-byte loads) before it
// counts any: the grid (<= one block per SM: a cooperative launch) covers 67.6 k entries per sweep on an H200,
// so the 324 k entries of T = 36007 K = 9 were 5 dependent memory round trips one pair at a time, 1 now.
constexpr int kCountBatch = 8;

__device__ __forceinline__ void count_entries(const int64_t *__restrict__ idx, int64_t n, int G, int *target,
                                              DeviceError *err, int err_code) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 2;
  const bool aligned = (reinterpret_cast<uintptr_t>(idx) & 15) == 0;  // then idx + f is, f even
  for (int64_t f0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 2; f0 < n;
       f0 += stride * kCountBatch) {
    int64_t v[kCountBatch][2];
    if (aligned && f0 + (kCountBatch - 1) * stride + 1 < n) {
#pragma unroll
      for (int u = 0; u < kCountBatch; ++u) {
        const longlong2 q = __ldg(reinterpret_cast<const longlong2 *>(idx + f0 + u * stride));
        v[u][0] = q.x, v[u][1] = q.y;
      }
    } else {
#pragma unroll
      for (int u = 0; u < kCountBatch; ++u)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int64_t f = f0 + u * stride + e;
          v[u][e] = f < n ? __ldg(idx + f) : -1;
        }
    }
#pragma unroll
    for (int u = 0; u < kCountBatch; ++u)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t x = v[u][e];
        if (x >= 0 && x < G)
          atomicAdd(target + x, 1);
        else if (x != -1)
          record_value_error(err, err_code, x, f0 + u * stride + e, G);
      }
  }
}

// The reference's fp32 aux_fi of one count: count * E / (T * num_aux_topk), 0 when the denominator is.
__device__ __forceinline__ float aux_fi_value(int count, int E, float fi_den) {
  return fi_den == 0.0f ? 0.0f : (static_cast<float>(count) * static_cast<float>(E)) / fi_den;
}

// Histogram of idx[0..n) into `counts` (entries -1 skipped, others outside [-1, G) reported) inside one
// cooperative launch, with no workspace and no memset (a memset is a second launch per call): zero the
// output, count (shared-memory bins when they fit), grid barrier, flush the bins with atomics (or count into
// the zeroed output directly). Integer counts: deterministic. Every block of the grid calls.
__device__ void grid_histogram(cg::grid_group &grid, const int64_t *__restrict__ idx, int64_t n, int G, bool smem_bins,
                               int *bins, int *counts, DeviceError *err, int err_code) {
  const int64_t gtid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t gstride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = gtid; e < G; e += gstride) counts[e] = 0;
  if (smem_bins) {
    for (int i = threadIdx.x; i < G; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    count_entries(idx, n, G, bins, err, err_code);
  }
  grid.sync();
  if (smem_bins) {
    for (int i = threadIdx.x; i < G; i += blockDim.x)
      if (bins[i]) atomicAdd(counts + i, bins[i]);
  } else {
    count_entries(idx, n, G, counts, err, err_code);
  }
}

// group_count and aux_fi for up to kClusterMaxEntries entries with shared-memory bins (the 16 k entries of
// T = 8131 K = 2 at TileKernels' smallest shape): one thread block cluster of kClusterBlocks blocks (sm_90).
// Each block counts its share into its own shared bins (one batch of loads per thread); after a cluster
// barrier block 0 sums the blocks' bins through distributed shared memory and writes every output element: no
// zeroing, no global atomics, no grid barrier (the cooperative kernels' barrier made group_count 3.28 µs and
// aux_fi 3.80 against TileKernels' 2.52 and 2.50 there). Integer counts: the same results.
constexpr int kClusterBlocks = 8;
constexpr int64_t kClusterMaxEntries = int64_t{kClusterBlocks} * kThreads * 2 * kCountBatch;  // 32768

template <bool AUX_FI>
__global__ void __launch_bounds__(kThreads)
    histogram_cluster_kernel(const int64_t *__restrict__ idx, int64_t n, int G, void *out, float fi_den,
                             DeviceError *err, int err_code) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ int bins[];
  cg::cluster_group cluster = cg::this_cluster();
  for (int i = threadIdx.x; i < G; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  count_entries(idx, n, G, bins, err, err_code);  // the grid is the cluster
  cluster.sync();
  if (cluster.block_rank() == 0) {
    for (int e = threadIdx.x; e < G; e += blockDim.x) {
      int total = 0;
#pragma unroll
      for (int r = 0; r < kClusterBlocks; ++r) total += cluster.map_shared_rank(bins, r)[e];
      if constexpr (AUX_FI)
        static_cast<float *>(out)[e] = aux_fi_value(total, G, fi_den);
      else
        static_cast<int32_t *>(out)[e] = total;
    }
  }
  cluster.sync();  // every block's bins stay alive until block 0 has read them
#else
  __trap();  // never launched: cluster_kernels_built() is false for this code
#endif
}

// group_count and aux_fi for up to kWideMaxEntries entries and kWideMaxBins bins, on a grid of up to 2 blocks
// per SM of kWideThreads threads, one 16-byte load of ids per thread (TileKernels' count kernel: 264 blocks
// with global atomics into an output a fill kernel zeroed; the 8-block cluster above paid 5.3-5.75 k cycles on
// its busiest SM against their 2.0-2.2 k). Each warp counts its pairs with __match_any_sync (one shared add per
// distinct id, not one per entry: with 9 experts a warp's 64 ids would be 7-way conflicts), each block adds
// its bins to the stream's workspace, one 64-bit word per bin holding (arrivals << 32) | count, in ONE atomic
// that returns the word before it. The block that sees arrivals == blocks - 1 is the bin's last: it knows
// the total, writes the output and stores 0 back (every block has added), so the workspace is zero again for
// the stream's next call. After the loads, one L2 round trip: no fence, no ticket, no second pass, no memset,
// no grid barrier. (A first version added counts, fenced, took a ticket and had the last block read them
// back: three round trips, 3.23 / 3.62 us against the cluster's 3.18 / 3.31.) Integer counts: the same
// results as every other path.
constexpr int kWideThreads = 128;
constexpr int64_t kWideMaxEntries = 65536;
constexpr int kWideMaxBins = 1024;
constexpr unsigned long long kWideArrival = 1ull << 32;
static_assert(kWideMaxBins * sizeof(unsigned long long) <= kCountWorkspaceBytes, "workspace size");
static_assert(kWideMaxEntries < (1ll << 32), "a bin's count fits the word's low half");

template <bool AUX_FI>
__global__ void __launch_bounds__(kWideThreads)
    histogram_wide_kernel(const int64_t *__restrict__ idx, int64_t n, int G, void *out, float fi_den,
                          unsigned long long *workspace, DeviceError *err, int err_code) {
  __shared__ int bins[kWideMaxBins];
  for (int i = threadIdx.x; i < G; i += blockDim.x) bins[i] = 0;
  // A pair of entries per thread per sweep; at full size the grid covers n in one sweep (a smaller SM count
  // from set_num_sms takes more). The sweep loop is warp-uniform (__match_any_sync needs the whole warp); the
  // first sweep's loads are issued before the barrier that orders the zeroing.
  const bool aligned = (reinterpret_cast<uintptr_t>(idx) & 15) == 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 2;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  const int64_t warp_first = first - 2 * (threadIdx.x & 31);
  const unsigned below = (1u << (threadIdx.x & 31)) - 1u;
  int64_t v[2];
  auto load = [&](int64_t f) {
    if (aligned && f + 1 < n) {
      const longlong2 q = __ldg(reinterpret_cast<const longlong2 *>(idx + f));
      v[0] = q.x, v[1] = q.y;
    } else {
      v[0] = f < n ? __ldg(idx + f) : -1;
      v[1] = f + 1 < n ? __ldg(idx + f + 1) : -1;
    }
  };
  load(first);
  __syncthreads();  // bins zeroed
  for (int64_t s = 0; warp_first + s < n; s += stride) {
    if (s > 0) load(first + s);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const bool ok = v[e] >= 0 && v[e] < G;
      if (!ok && v[e] != -1) record_value_error(err, err_code, v[e], first + s + e, G);
      const int key = ok ? static_cast<int>(v[e]) : -1;
      const unsigned peers = __match_any_sync(kFullMask, key);
      if (key >= 0 && (peers & below) == 0) atomicAdd(bins + key, __popc(peers));  // one leader per id
    }
  }
  __syncthreads();
  const unsigned long long last = static_cast<unsigned long long>(gridDim.x - 1) << 32;
  for (int i = threadIdx.x; i < G; i += blockDim.x) {
    const unsigned long long mine = kWideArrival | static_cast<unsigned>(bins[i]);
    const unsigned long long before = atomicAdd(workspace + i, mine);
    if ((before & ~0xffffffffull) != last) continue;
    const int total = static_cast<int>((before + mine) & 0xffffffffull);
    workspace[i] = 0ull;  // every block has added to this bin: zero for the stream's next call
    if constexpr (AUX_FI)
      static_cast<float *>(out)[i] = aux_fi_value(total, G, fi_den);
    else
      static_cast<int32_t *>(out)[i] = total;
  }
}

__global__ void __launch_bounds__(kThreads) group_count_kernel(const int64_t *__restrict__ idx, int64_t n, int G,
                                                               int smem_bins, int32_t *counts, DeviceError *err) {
  extern __shared__ int bins[];
  cg::grid_group grid = cg::this_grid();
  grid_histogram(grid, idx, n, G, smem_bins != 0, bins, counts, err, kErrGroupIdxRange);
}

// aux_fi: the same histogram with the output doubling as the int32 counter array, then a second grid barrier
// and each count turned into the reference's fp32 formula in place.
__global__ void __launch_bounds__(kThreads) aux_fi_kernel(const int64_t *__restrict__ idx, int64_t n, int E,
                                                          int smem_bins, float *fi, float fi_den, DeviceError *err) {
  extern __shared__ int bins[];
  cg::grid_group grid = cg::this_grid();
  int *counts = reinterpret_cast<int *>(fi);
  grid_histogram(grid, idx, n, E, smem_bins != 0, bins, counts, err, kErrTopkIdxRange);
  grid.sync();
  const int64_t gtid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t gstride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = gtid; e < E; e += gstride) {
    const int c = __ldcg(counts + e);
    fi[e] = aux_fi_value(c, E, fi_den);
  }
}

// aux_fi with one grid barrier instead of two, for n < 2^23 entries and at most kArrivalMax blocks: each
// 32-bit word of the output holds (arrivals << 23) | count while counting. After the barrier (which orders the
// zeroing before every flush), every block adds (1 << 23) | its bin count to every bin, zero counts included;
// the atomic's old value tells the last block to arrive at a bin (old >> 23 == grid - 1) the final count
// (old + its own, low 23 bits; no count reaches 2^23), and that block writes fi in place. All the data are in
// the atomic word itself, so no fence or second barrier is needed; the counts are integers, so the result is
// the same as the two-barrier kernel's.
constexpr int kArrivalShift = 23;
constexpr int64_t kArrivalMaxCount = (int64_t{1} << kArrivalShift) - 1;
constexpr unsigned kArrivalMax = 1u << (32 - kArrivalShift);  // 512 blocks

__global__ void __launch_bounds__(kThreads) aux_fi_arrival_kernel(const int64_t *__restrict__ idx, int64_t n, int E,
                                                                  float *fi, float fi_den, DeviceError *err) {
  extern __shared__ int bins[];
  cg::grid_group grid = cg::this_grid();
  unsigned *words = reinterpret_cast<unsigned *>(fi);
  const int64_t gtid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t gstride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = gtid; e < E; e += gstride) words[e] = 0u;
  for (int i = threadIdx.x; i < E; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  count_entries(idx, n, E, bins, err, kErrTopkIdxRange);
  grid.sync();
  const unsigned last = gridDim.x - 1;
  for (int i = threadIdx.x; i < E; i += blockDim.x) {
    const unsigned mine = static_cast<unsigned>(bins[i]);
    const unsigned old = atomicAdd(words + i, (1u << kArrivalShift) | mine);
    if ((old >> kArrivalShift) == last)
      fi[i] = aux_fi_value(static_cast<int>((old & static_cast<unsigned>(kArrivalMaxCount)) + mine), E, fi_den);
  }
}

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
// the run-time-K kernel above's 1.54; a K-templated kernel measured 1.47). The same arithmetic:
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

// One thread per token; the row's ids are loaded kUniqueBatch at a time, all before any is examined (the loop
// with a store in it loaded them one round trip each), then later duplicates become -1 in slot order.
constexpr int kUniqueBatch = 16;

__global__ void __launch_bounds__(kThreads)
    unique_kernel(int64_t *idx, int64_t T, int K, int64_t bound, DeviceError *err) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  int64_t *row = idx + t * K;
  unsigned long long seen[2] = {0ull, 0ull};  // bound <= 128
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
      const unsigned long long bit = 1ull << (g[u] & 63);
      if (seen[g[u] >> 6] & bit)
        row[k] = -1;
      else
        seen[g[u] >> 6] |= bit;
    }
  }
}

}  // namespace

namespace {

// The cooperative histogram launch of `n` entries into `bins` bins (grid_histogram): grid <= SM count (one
// block per SM always fits), shared-memory bins when they fit.
struct HistogramLaunch {
  unsigned grid;
  int smem_bins;
  size_t smem;
};
HistogramLaunch histogram_launch(int64_t n, int64_t bins, const LaunchCtx &c) {
  const size_t smem = static_cast<size_t>(bins) * sizeof(int);
  const int smem_bins = smem <= static_cast<size_t>(c.max_smem_per_block) && smem <= 48 * 1024;
  return {grid_for(n > bins ? n : bins, kThreads * 2, static_cast<int64_t>(c.num_sms)), smem_bins,
          smem_bins ? smem : 0};
}

}  // namespace

// One cluster of kClusterBlocks blocks (histogram_cluster_kernel), for small inputs on sm_90 and later; sets
// *launched when it took the call.
// Whether the cluster kernel's code was built for sm_90 or later (a build for an older architecture alone runs
// on an sm_90 device through its PTX, without cluster support); asked once, of the first device used.
bool cluster_kernels_built() {
  static const bool built = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, histogram_cluster_kernel<false>) != cudaSuccess) {
      (void)cudaGetLastError();  // not the caller's error
      return false;
    }
    return attr.binaryVersion >= 90;
  }();
  return built;
}

// The wide kernel (histogram_wide_kernel) for up to kWideMaxEntries entries into up to kWideMaxBins bins, where
// the stream has a workspace; sets *launched when it took the call. Grid: one 16-byte load of ids per thread,
// at most 2 blocks per SM.
template <bool AUX_FI>
Status launch_histogram_wide(const int64_t *idx, int64_t n, int G, void *out, float fi_den, int err_code,
                             const LaunchCtx &c, bool *launched) {
  *launched = false;
  if (n > kWideMaxEntries || G > kWideMaxBins) return kSuccess;
  void *workspace = nullptr;
  MOE_TRY(stream_workspace(c.device, c.stream, &workspace));
  if (workspace == nullptr) return kSuccess;
  const unsigned grid = grid_for(n, int64_t{kWideThreads} * 2, 2 * static_cast<int64_t>(c.num_sms));
  histogram_wide_kernel<AUX_FI><<<grid, kWideThreads, 0, c.stream>>>(
      idx, n, G, out, fi_den, static_cast<unsigned long long *>(workspace), c.err, err_code);
  *launched = true;
  return kSuccess;
}

template <bool AUX_FI>
Status launch_histogram_cluster(const int64_t *idx, int64_t n, int G, void *out, float fi_den, int err_code,
                                const HistogramLaunch &h, const LaunchCtx &c, bool *launched) {
  *launched = c.cc_major >= 9 && h.smem_bins && n <= kClusterMaxEntries && cluster_kernels_built();
  if (!*launched) return kSuccess;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(kClusterBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = h.smem;
  cfg.stream = c.stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = kClusterBlocks;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  MOE_CUDA(cudaLaunchKernelEx(&cfg, histogram_cluster_kernel<AUX_FI>, idx, n, G, out, fi_den, c.err, err_code));
  return kSuccess;
}

Status launch_group_count(const GroupCountArgs &a, const LaunchCtx &c) {
  // One cooperative kernel: zeroes and counts, no memset; small inputs: the wide kernel with the stream's
  // workspace, else one thread block cluster.
  int64_t n = a.n;
  int G = static_cast<int>(a.G);
  HistogramLaunch h = histogram_launch(n, a.G, c);
  bool launched = false;
  MOE_TRY(launch_histogram_wide<false>(a.idx, n, G, a.counts, 0.0f, kErrGroupIdxRange, c, &launched));
  if (launched) return kSuccess;
  MOE_TRY(launch_histogram_cluster<false>(a.idx, n, G, a.counts, 0.0f, kErrGroupIdxRange, h, c, &launched));
  if (launched) return kSuccess;
  const int64_t *idx = a.idx;
  int32_t *counts = a.counts;
  DeviceError *err = c.err;
  void *args[] = {&idx, &n, &G, &h.smem_bins, &counts, &err};
  MOE_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(group_count_kernel), dim3(h.grid), dim3(kThreads), args,
                                       h.smem, c.stream));
  return kSuccess;
}

Status launch_aux_fi(const AuxFiArgs &a, const LaunchCtx &c) {
  // Small inputs: the wide kernel with the stream's workspace, else one cluster; then one cooperative kernel,
  // no allocation, no memset; one grid barrier where the arrival counts fit.
  int64_t n = a.T * a.K;
  int E = static_cast<int>(a.E);
  HistogramLaunch h = histogram_launch(n, a.E, c);
  float *fi = a.fi;
  float den = static_cast<float>(a.T * a.num_aux_topk);
  const int64_t *idx = a.idx;
  DeviceError *err = c.err;
  bool launched = false;
  MOE_TRY(launch_histogram_wide<true>(idx, n, E, fi, den, kErrTopkIdxRange, c, &launched));
  if (launched) return kSuccess;
  MOE_TRY(launch_histogram_cluster<true>(idx, n, E, fi, den, kErrTopkIdxRange, h, c, &launched));
  if (launched) return kSuccess;
  if (h.smem_bins && n <= kArrivalMaxCount && h.grid <= kArrivalMax) {
    void *args[] = {&idx, &n, &E, &fi, &den, &err};
    MOE_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(aux_fi_arrival_kernel), dim3(h.grid), dim3(kThreads),
                                         args, h.smem, c.stream));
    return kSuccess;
  }
  void *args[] = {&idx, &n, &E, &h.smem_bins, &fi, &den, &err};
  MOE_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(aux_fi_kernel), dim3(h.grid), dim3(kThreads), args,
                                       h.smem, c.stream));
  return kSuccess;
}

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
  const unsigned grid = grid_for(a.T, kThreads, INT32_MAX);
  unique_kernel<<<grid, kThreads, 0, c.stream>>>(a.idx, a.T, static_cast<int>(a.K), align_up(a.num_groups, 64), c.err);
  return kSuccess;
}

}  // namespace tshmem_moe
