// get_fused_mapping (spec §13) as ONE cooperative kernel with no workspace allocation and no memset:
//   1. each block counts its contiguous chunk of the flat slots per warp and per expert (shared memory) and
//      publishes its per-expert totals in a scratch area that lies inside block 0's own chunk of the
//      token_topk_to_pos output (overwritten by block 0 at the very end);
//   2. grid barrier; every block reads all blocks' totals (global counts, the prefix of earlier blocks), scans
//      the aligned counts over experts, derives each warp's running base per expert, fills its share of the
//      padding rows with -1, and signals that it is done reading the scratch (block 0 waits for that signal,
//      and only block 0, before it writes its chunk);
//   3. each warp places its sub-chunk 32 entries at a time (__match_any_sync ranks) in ascending flat order f
//      inside each expert segment: the spec's canonical order, so the result never depends on the grid.
// Every output element is written exactly once (valid rows, padding rows, the tail beyond the used rows).
#include <cooperative_groups.h>

#include "kernels_common.cuh"

namespace tshmem_moe {
namespace {

namespace cg = cooperative_groups;

constexpr int kMaxThreads = 1024;
constexpr int kMaxEpt = 4;  // experts per thread: E <= 1024 with >= 256 threads
constexpr int kBatch = 4;   // 32-entry steps whose loads are issued together

// Exclusive scan of one int64 per thread over the block; *total receives the sum. `sums` holds 32 int64.
__device__ int64_t block_exclusive_scan(int64_t v, int64_t *total, int64_t *sums) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  int64_t incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int64_t y = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) sums[warp] = incl;
  __syncthreads();
  int64_t before = 0, all = 0;
  for (int w = 0; w < nw; ++w) {
    const int64_t s = sums[w];
    if (w < warp) before += s;
    all += s;
  }
  __syncthreads();
  *total = all;
  return before + incl - v;
}

// The expert of slot f, or -1 (also for out-of-range values, which phase 1 reports).
__device__ __forceinline__ int load_expert(const int64_t *__restrict__ idx, int64_t f, int64_t end, int E) {
  if (f >= end) return -1;
  const int64_t v = __ldg(idx + f);
  return (v >= 0 && v < E) ? static_cast<int>(v) : -1;
}

__global__ void __launch_bounds__(kMaxThreads)
    mapping_kernel(MappingArgs a, int64_t n, int64_t chunk, DeviceError *err) {
  extern __shared__ int smem[];  // [W][E] per-warp counts, later per-warp bases; then [E] start, [E] count
  __shared__ int64_t scan_sums[32];
  cg::grid_group grid = cg::this_grid();
  const int E = static_cast<int>(a.E);
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, W = blockDim.x / 32;
  const int nb = gridDim.x, b = blockIdx.x;
  const unsigned lt = (1u << lane) - 1u;
  int *wc = smem;
  int *seg_start = smem + W * E;
  int *seg_count = seg_start + E;
  int *scratch = a.token_topk_to_pos;  // [nb][E] block totals, then the read-done counter
  unsigned *done = reinterpret_cast<unsigned *>(scratch + static_cast<int64_t>(nb) * E);

  const int64_t c0 = static_cast<int64_t>(b) * chunk;
  const int64_t c1 = c0 + chunk < n ? c0 + chunk : n;
  const int64_t wl = ((chunk + W - 1) / W + 31) / 32 * 32;
  const int64_t w0 = c0 + static_cast<int64_t>(warp) * wl;
  const int64_t w1 = w0 + wl < c1 ? w0 + wl : c1;

  for (int i = threadIdx.x; i < W * E; i += blockDim.x) wc[i] = 0;
  __syncthreads();

  // ---- phase 1: per-warp counts of this block's chunk ----
  int *my = wc + warp * E;
  for (int64_t f0 = w0; f0 < w1; f0 += 32 * kBatch) {  // warp-uniform
    int v[kBatch];
#pragma unroll
    for (int s = 0; s < kBatch; ++s) {
      const int64_t f = f0 + s * 32 + lane;
      v[s] = -1;
      if (f < w1) {
        const int64_t x = __ldg(a.idx + f);
        if (x >= 0 && x < E)
          v[s] = static_cast<int>(x);
        else if (x != -1)
          record_value_error(err, kErrTopkIdxRange, x, f, E);
      }
    }
#pragma unroll
    for (int s = 0; s < kBatch; ++s) {
      const unsigned peers = __match_any_sync(kFullMask, v[s]);
      if (v[s] >= 0 && (peers & lt) == 0) my[v[s]] += __popc(peers);  // one leader per expert: no atomics
      __syncwarp();
    }
  }
  __syncthreads();

  const int ept = (E + blockDim.x - 1) / blockDim.x;  // <= kMaxEpt, contiguous experts per thread
  const int e0 = threadIdx.x * ept;
  int64_t all[kMaxEpt], before[kMaxEpt];
#pragma unroll
  for (int u = 0; u < kMaxEpt; ++u) {
    all[u] = 0, before[u] = 0;
    const int e = e0 + u;
    if (u < ept && e < E) {
      for (int w = 0; w < W; ++w) all[u] += wc[w * E + e];
      if (nb > 1) scratch[static_cast<int64_t>(b) * E + e] = static_cast<int>(all[u]);
    }
  }
  if (nb > 1 && b == 0 && threadIdx.x == 0) *done = 0u;
  grid.sync();

  // ---- phase 2: global counts, segments, per-warp bases ----
  if (nb > 1) {
    // Every block's totals: one warp per expert, the lanes over the blocks (all loads in flight at once,
    // not nb in a row), summed by shuffles; parked in seg_count / seg_start (their final values come later,
    // from the same owner thread). Counts fit an int: n <= INT32_MAX (checked by the API).
    for (int e = warp; e < E; e += W) {
      int tot = 0, pre = 0;
      for (int cb = lane; cb < nb; cb += 32) {
        const int x = __ldcg(scratch + static_cast<int64_t>(cb) * E + e);
        tot += x;
        if (cb < b) pre += x;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        tot += __shfl_xor_sync(kFullMask, tot, o);
        pre += __shfl_xor_sync(kFullMask, pre, o);
      }
      if (lane == 0) seg_count[e] = tot, seg_start[e] = pre;
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kMaxEpt; ++u) {
      const int e = e0 + u;
      if (u < ept && e < E) all[u] = seg_count[e], before[u] = seg_start[e];
    }
    __syncthreads();  // the owners overwrite seg_* below
  }
  int64_t aligned[kMaxEpt];
  int64_t local = 0;
#pragma unroll
  for (int u = 0; u < kMaxEpt; ++u) {
    aligned[u] = (u < ept && e0 + u < E) ? (all[u] + a.alignment - 1) / a.alignment * a.alignment : 0;
    local += aligned[u];
  }
  int64_t total = 0;
  int64_t start = block_exclusive_scan(local, &total, scan_sums);
  if (b == 0 && threadIdx.x == 0 && total > a.P) record_value_error(err, kErrMappingOverflow, total, 0, a.P);
#pragma unroll
  for (int u = 0; u < kMaxEpt; ++u) {
    const int e = e0 + u;
    if (u >= ept || e >= E) continue;
    if (b == 0) {
      a.expert_start[e] = static_cast<int32_t>(start);
      a.expert_end[e] = static_cast<int32_t>(start + aligned[u]);
      a.num_tokens_per_expert[e] = static_cast<int32_t>(aligned[u]);
    }
    seg_start[e] = static_cast<int>(start);
    seg_count[e] = static_cast<int>(all[u]);
    int64_t run = start + before[u];
    for (int w = 0; w < W; ++w) {
      const int cnt = wc[w * E + e];
      wc[w * E + e] = static_cast<int>(run);
      run += cnt;
    }
    start += aligned[u];
  }
  __syncthreads();  // every thread has consumed its scratch loads (they fed the bases stored above)
  if (nb > 1 && threadIdx.x == 0) {
    __threadfence();
    atomicAdd(done, 1u);
  }

  // Padding rows of this block's experts (e = b, b + nb, ...) and its share of the tail [total, P): -1.
  // (On overflow, total > P, the error is reported and no padding is written.)
  for (int e = b; total <= a.P && e < E; e += nb) {
    const int64_t p0 = static_cast<int64_t>(seg_start[e]) + seg_count[e];
    const int64_t p1 =
        static_cast<int64_t>(seg_start[e]) + (seg_count[e] + a.alignment - 1) / a.alignment * a.alignment;
    for (int64_t p = p0 + threadIdx.x; p < p1 && p < a.P; p += blockDim.x)
      a.pos_to_expert[p] = -1, a.pos_to_token[p] = -1, a.pos_to_token_topk[p] = -1;
  }
  for (int64_t p = total + static_cast<int64_t>(b) * blockDim.x + threadIdx.x; p < a.P;
       p += static_cast<int64_t>(nb) * blockDim.x)
    a.pos_to_expert[p] = -1, a.pos_to_token[p] = -1, a.pos_to_token_topk[p] = -1;

  // Block 0's chunk holds the scratch: wait until every block has read it.
  if (nb > 1 && b == 0) {
    if (threadIdx.x == 0) {
      while (atomicAdd(done, 0u) < static_cast<unsigned>(nb)) __nanosleep(32);
      __threadfence();
    }
    __syncthreads();
  }

  // ---- phase 3: placement ----
  const int K = static_cast<int>(a.K);
  for (int64_t f0 = w0; f0 < w1; f0 += 32 * kBatch) {  // warp-uniform
    int v[kBatch];
#pragma unroll
    for (int s = 0; s < kBatch; ++s) v[s] = load_expert(a.idx, f0 + s * 32 + lane, w1, E);
#pragma unroll
    for (int s = 0; s < kBatch; ++s) {
      const int64_t f = f0 + s * 32 + lane;
      const unsigned peers = __match_any_sync(kFullMask, v[s]);
      int64_t pos = -1;
      if (v[s] >= 0) pos = my[v[s]] + __popc(peers & lt);
      __syncwarp();
      if (v[s] >= 0 && (peers & lt) == 0) my[v[s]] += __popc(peers);  // the lowest peer advances the expert
      __syncwarp();
      if (f < w1) {
        if (pos >= a.P) pos = -1;  // overflow: reported by block 0, never written out of bounds
        a.token_topk_to_pos[f] = static_cast<int32_t>(pos);
        if (pos >= 0) {
          const unsigned fu = static_cast<unsigned>(f);  // n <= INT32_MAX (checked by the API)
          a.pos_to_expert[pos] = v[s];
          a.pos_to_token[pos] = static_cast<int32_t>(fu / static_cast<unsigned>(K));
          a.pos_to_token_topk[pos] = static_cast<int32_t>(fu);
        }
      }
    }
  }
}

}  // namespace

Status launch_get_fused_mapping(const MappingArgs &a, const LaunchCtx &c) {
  const int64_t n = a.T * a.K;
  const int E = static_cast<int>(a.E);
  // Threads: up to 16 warps (measured on H200 at T = 34300, K = 9, E = 4: 512 threads per block ran 12.5 us,
  // 1024 ran 13.0 us: the block-wide barriers wait for fewer warps), fewer when the [W][E] count table would
  // pass 48 KB (>= 8 warps since E <= 1024). Blocks: one per SM (66 blocks: 15.5 us, 33: 20.3 us).
  int threads = 512;
  while (threads > 256 && (static_cast<size_t>(threads / 32) * E + 2 * E) * 4 > 48 * 1024) threads /= 2;
  // Blocks: at most one per SM (co-resident for the cooperative launch), at most 8192 scratch entries to read
  // per block, and block 0's chunk must hold the scratch (nb * E totals + the counter).
  int64_t nb = c.num_sms;
  if (nb * E > 8192) nb = 8192 / E;
  if (nb < 1) nb = 1;
  while (nb > 1 && ((n + nb - 1) / nb) < nb * E + 1) --nb;
  int64_t chunk = nb > 1 ? (n + nb - 1) / nb : n;
  if (chunk < 1) chunk = 1;
  const size_t smem = (static_cast<size_t>(threads / 32) * E + 2 * static_cast<size_t>(E)) * 4;
  MappingArgs args = a;
  int64_t nn = n;
  DeviceError *err = c.err;
  void *params[] = {&args, &nn, &chunk, &err};
  MOE_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(mapping_kernel), dim3(static_cast<unsigned>(nb)),
                                       dim3(static_cast<unsigned>(threads)), params, smem, c.stream));
  return kSuccess;
}

}  // namespace tshmem_moe
