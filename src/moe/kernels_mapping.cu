// get_fused_mapping (spec §13) as two ordinary kernels (no grid barrier, no cooperative launch):
//   1. fill the pos_to_* arrays with -1 and count each 8192-entry block tile per expert;
//   2. every block derives the global expert segments from those counts (a redundant but tiny scan), the
//      prefix of earlier tiles, and places its entries in ascending flat order f within each expert
//      segment (the spec's canonical order), warp by warp with __match_any_sync ranks.
// The placement depends only on the data, never on the grid or SM count.
#include "kernels_common.cuh"

namespace tshmem_moe {
namespace {

constexpr int kMapWarps = 8;
constexpr int kMapThreads = kMapWarps * 32;
constexpr int kWarpTile = 1024;                    // 32 steps of 32 entries
constexpr int kBlockTile = kMapWarps * kWarpTile;  // entries per block tile

__global__ void __launch_bounds__(kMapThreads) mapping_count_kernel(MappingArgs a, int64_t n, int num_tiles,
                                                                     int32_t* tile_counts, DeviceError* err) {
  extern __shared__ int bins[];
  const int E = static_cast<int>(a.E);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < a.P; p += stride)
    a.pos_to_expert[p] = -1, a.pos_to_token[p] = -1, a.pos_to_token_topk[p] = -1;
  if (static_cast<int>(blockIdx.x) >= num_tiles) return;
  for (int e = threadIdx.x; e < E; e += blockDim.x) bins[e] = 0;
  __syncthreads();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kBlockTile;
  for (int i = threadIdx.x; i < kBlockTile && base + i < n; i += blockDim.x) {
    const int64_t v = __ldg(a.idx + base + i);
    if (v >= 0 && v < E)
      atomicAdd(bins + v, 1);
    else if (v != -1)
      record_value_error(err, kErrTopkIdxRange, v, base + i, E);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) tile_counts[static_cast<int64_t>(blockIdx.x) * E + e] = bins[e];
}

// Exclusive scan of one int64 per thread over the block; *total receives the sum.
__device__ int64_t block_exclusive_scan(int64_t v, int64_t* total) {
  __shared__ int64_t warp_sums[kMapWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int64_t incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int64_t y = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  int64_t before = 0, all = 0;
  for (int w = 0; w < kMapWarps; ++w) {
    if (w < warp) before += warp_sums[w];
    all += warp_sums[w];
  }
  __syncthreads();
  *total = all;
  return before + incl - v;
}

__global__ void __launch_bounds__(kMapThreads) mapping_place_kernel(MappingArgs a, int64_t n,
                                                                     const int32_t* __restrict__ tile_counts,
                                                                     int num_tiles, DeviceError* err) {
  extern __shared__ int warp_base[];  // [kMapWarps][E]: running next position of each expert per warp
  const int E = static_cast<int>(a.E);
  const int ept = (E + kMapThreads - 1) / kMapThreads;  // experts per thread, contiguous, <= 4
  const int e0 = threadIdx.x * ept;
  const int tile = blockIdx.x;
  int64_t before[4], aligned[4];
  int64_t local = 0;
  for (int u = 0; u < ept; ++u) {
    const int e = e0 + u;
    int64_t tot = 0, pre = 0;
    if (e < E)
      for (int c = 0; c < num_tiles; ++c) {
        const int64_t x = __ldg(tile_counts + static_cast<int64_t>(c) * E + e);
        tot += x;
        if (c < tile) pre += x;
      }
    before[u] = pre;
    aligned[u] = e < E ? (tot + a.alignment - 1) / a.alignment * a.alignment : 0;
    local += aligned[u];
  }
  int64_t total = 0;
  int64_t start = block_exclusive_scan(local, &total);
  if (blockIdx.x == 0 && threadIdx.x == 0 && total > a.P) record_value_error(err, kErrMappingOverflow, total, 0, a.P);
  for (int w = 0; w < kMapWarps; ++w)
    for (int u = 0; u < ept; ++u)
      if (e0 + u < E) warp_base[w * E + e0 + u] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int64_t wbase = static_cast<int64_t>(tile) * kBlockTile + static_cast<int64_t>(warp) * kWarpTile;
  // The warp's 1024 entries, loaded once with every load in flight (a dependent per-step load would make
  // the sequential placement below latency-bound).
  int vals[kWarpTile / 32];
#pragma unroll
  for (int s = 0; s < kWarpTile / 32; ++s) {
    const int64_t f = wbase + s * 32 + lane;
    const int64_t v = f < n ? __ldg(a.idx + f) : -1;
    vals[s] = (v >= 0 && v < E) ? static_cast<int>(v) : -1;
  }
#pragma unroll
  for (int s = 0; s < kWarpTile / 32; ++s)  // per-warp counts of this tile
    if (vals[s] >= 0) atomicAdd(warp_base + warp * E + vals[s], 1);
  __syncthreads();
  for (int u = 0; u < ept; ++u) {
    const int e = e0 + u;
    if (e >= E) continue;
    if (blockIdx.x == 0) {
      a.expert_start[e] = static_cast<int32_t>(start);
      a.expert_end[e] = static_cast<int32_t>(start + aligned[u]);
      a.num_tokens_per_expert[e] = static_cast<int32_t>(aligned[u]);
    }
    int64_t run = start + before[u];
    for (int w = 0; w < kMapWarps; ++w) {
      const int c = warp_base[w * E + e];
      warp_base[w * E + e] = static_cast<int>(run);
      run += c;
    }
    start += aligned[u];
  }
  __syncthreads();
  const unsigned lt = (1u << lane) - 1u;
  int* my_base = warp_base + warp * E;
#pragma unroll
  for (int s = 0; s < kWarpTile / 32; ++s) {
    const int64_t f0 = wbase + s * 32;
    if (f0 >= n) break;  // warp-uniform
    const int64_t f = f0 + lane;
    const int v = vals[s];
    const bool valid = v >= 0;
    const unsigned peers = __match_any_sync(kFullMask, v);
    int64_t pos = -1;
    if (valid) pos = my_base[v] + __popc(peers & lt);
    __syncwarp();
    if (valid && (peers & lt) == 0) my_base[v] += __popc(peers);  // the lowest peer advances the expert
    __syncwarp();
    if (f >= n) continue;
    if (valid && pos >= a.P) pos = -1;  // overflow: reported by block 0, never written out of bounds
    a.token_topk_to_pos[f] = static_cast<int32_t>(pos);
    if (pos >= 0) {
      a.pos_to_expert[pos] = static_cast<int32_t>(v);
      a.pos_to_token[pos] = static_cast<int32_t>(f / a.K);
      a.pos_to_token_topk[pos] = static_cast<int32_t>(f);
    }
  }
}

}  // namespace

Status launch_get_fused_mapping(const MappingArgs& a, const LaunchCtx& c) {
  const int64_t n = a.T * a.K;
  const int num_tiles = static_cast<int>((n + kBlockTile - 1) / kBlockTile);
  void* ws = nullptr;
  const size_t ws_bytes = static_cast<size_t>(num_tiles > 0 ? num_tiles : 1) * static_cast<size_t>(a.E) * 4;
  MOE_CUDA(cudaMallocAsync(&ws, ws_bytes, c.stream));
  auto* tile_counts = static_cast<int32_t*>(ws);
  const int64_t fill_blocks = (a.P + kMapThreads - 1) / kMapThreads;
  unsigned grid1 = grid_for(fill_blocks, 1, 4 * static_cast<int64_t>(c.num_sms));
  if (grid1 < static_cast<unsigned>(num_tiles)) grid1 = static_cast<unsigned>(num_tiles);
  mapping_count_kernel<<<grid1, kMapThreads, static_cast<size_t>(a.E) * 4, c.stream>>>(a, n, num_tiles, tile_counts,
                                                                                      c.err);
  const unsigned grid2 = static_cast<unsigned>(num_tiles > 0 ? num_tiles : 1);
  mapping_place_kernel<<<grid2, kMapThreads, static_cast<size_t>(kMapWarps) * static_cast<size_t>(a.E) * 4,
                         c.stream>>>(a, n, tile_counts, num_tiles, c.err);
  const cudaError_t e = cudaGetLastError();
  (void)cudaFreeAsync(ws, c.stream);
  if (e != cudaSuccess) return cuda_fail(e, "get_fused_mapping launch");
  return kSuccess;
}

}  // namespace tshmem_moe
