// CUDA kernels of the mapping family (docs/moe.md, "The fused layout"): get_fused_mapping and
// expand_to_fused(_with_sf).
//
// get_fused_mapping as ONE kernel: up to 48 k slots one thread block cluster (mapping_cluster_kernel, below), else
// one cooperative kernel. The layout is the canonical one (ascending flat slot f inside each expert segment), so the
// result never depends on the kernel or the grid. The cooperative kernel:
//   1. each warp loads its contiguous sub-chunk of topk_idx in one round trip (kept in registers for step 4)
//      and counts it per expert; per expert, the warp counts become an exclusive prefix over the block's warps
//      (a segmented warp scan), and the block's totals go to its row of a table in the stream's workspace
//      (core/device.h: allocated on the stream's first use, no memset per call) or, where a stream has none (graph
//      capture, cudaStreamPerThread), in block 0's slots of the token_topk_to_pos output;
//   2. grid barrier; every block reads every row (all loads in flight at once) into the global count and the
//      prefix of the blocks before it; with the table in block 0's slots it then signals that it is done
//      reading (a release add);
//   3. each warp, on its own (no block barrier), scans the aligned counts over the experts (segment starts),
//      turns its row of prefixes into running bases, writes the padding rows of the experts its block owns and
//      its block's share of the tail [total, P) as -1;
//   4. each warp places its slots: base + the rank step 1 gave each slot among the warp's slots of its expert
//      (a warp whose sub-chunk passed one batch ranks again, 32 slots at a time); with the table in block
//      0's slots, a warp of block 0 whose slots hold rows writes its token_topk_to_pos entries last, once
//      every block has signalled (acquire).
// Every output element is written exactly once (with the table in block 0's slots, those twice). The
// kernel's time is a chain of dependent round trips (HBM, L2, barriers), so it keeps that chain short: no
// load behind a branch on an earlier load, no division (multiply-high by launch constants), no loop-carried
// shared-memory chain where a warp scan serves.
#include <cooperative_groups.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/kernels_common.cuh"
#include "mapping/mapping.h"

namespace tshmem_moe {
namespace {

namespace cg = cooperative_groups;

constexpr int kMaxThreads = 512;
constexpr int kSteps = 8;     // 32-slot steps per load batch: a warp's first 256 slots in one round trip
constexpr int kRowLoads = 8;  // table loads in flight per thread in step 2

struct MappingGeometry {
  int n;          // T * K (<= kMappingIndexLimit, checked by the API, as P is)
  int chunk;      // slots per block
  int warp_len;   // slots per warp, a multiple of 32
  int row_shift;  // a table row is 1 << row_shift ints: >= E and >= 8 (whole 32-byte sectors)
  FastDiv31 by_k, by_alignment, by_blocks;
  int *table;  // the stream workspace's rows table, or NULL: the table lives in block 0's slots
};

// The experts of loaded values x of the slots f0 + 32 s + lane: -1 for skips and for slots at or past `end`.
// Returns whether this lane saw a value outside [-1, E).
template <int N>
__device__ __forceinline__ bool classify_batch(int (&v)[N], const int64_t (&x)[N], int f0, int end, int E) {
  const int lane = threadIdx.x & 31;
  bool bad = false;
#pragma unroll
  for (int s = 0; s < N; ++s) {
    const bool in = f0 + s * 32 + lane < end;
    const bool ok = static_cast<uint64_t>(x[s]) < static_cast<uint64_t>(E);
    v[s] = in && ok ? static_cast<int>(x[s]) : -1;
    bad |= in && !ok && x[s] != -1;
  }
  return bad;
}

// The experts of a batch of kSteps * 32 slots starting at f0 (lane l holds f0 + 32 s + l). Every load is issued
// before any value is looked at (the address is clamped, not guarded): one memory round trip per batch. Returns
// whether this lane saw a value outside [-1, E).
__device__ __forceinline__ bool load_batch(int (&v)[kSteps], const int64_t *__restrict__ idx, int f0, int end, int E) {
  const int lane = threadIdx.x & 31;
  int64_t x[kSteps];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) x[s] = __ldg(idx + min(f0 + s * 32 + lane, end - 1));
  return classify_batch(v, x, f0, end, E);
}

// -1 over the padding rows [start + cnt, start + A) of every expert for which this lane's `mine` holds, by the
// whole warp (one expert at a time, 32 rows per store).
__device__ __forceinline__ void write_padding_rows(const MappingArgs &a, bool mine, unsigned start32, int cnt,
                                                   long long A) {
  const int lane = threadIdx.x & 31;
  for (unsigned todo = __ballot_sync(kFullMask, mine); todo != 0; todo &= todo - 1) {
    const int src = __ffs(todo) - 1;
    const int p0 = __shfl_sync(kFullMask, static_cast<int>(start32) + cnt, src);
    const int p1 = __shfl_sync(kFullMask, static_cast<int>(start32 + static_cast<unsigned>(A)), src);
    for (int p = p0 + lane; p < p1; p += 32)
      a.pos_to_expert[p] = -1, a.pos_to_token[p] = -1, a.pos_to_token_topk[p] = -1;
  }
}

// Out of line, taken only with a bad value: records this lane's bad slots of the batch (at most kSteps * 32).
__device__ __noinline__ void report_batch(const int64_t *__restrict__ idx, int f0, int end, int E, DeviceError *err) {
  const int last = min(end, f0 + kSteps * 32);
  for (int f = f0 + static_cast<int>(threadIdx.x & 31); f < last; f += 32) {
    const int64_t x = idx[f];
    if (x != -1 && static_cast<uint64_t>(x) >= static_cast<uint64_t>(E))
      record_value_error(err, kErrTopkIdxRange, x, f, E);
  }
}

// -1 over p[b0, b1) by the whole block: 16-byte stores between a scalar head and tail.
__device__ __forceinline__ void fill_minus_one(int32_t *p, int b0, int b1) {
  if (b0 >= b1) return;
  const int head = min(b1, b0 + static_cast<int>(((16u - (reinterpret_cast<uintptr_t>(p + b0) & 15u)) & 15u) >> 2));
  const int tid = threadIdx.x;
  if (tid < head - b0) p[b0 + tid] = -1;
  const int vecs = (b1 - head) >> 2;
  int4 *v = reinterpret_cast<int4 *>(p + head);
  for (int i = tid; i < vecs; i += blockDim.x) v[i] = make_int4(-1, -1, -1, -1);
  if (head + vecs * 4 + tid < b1) p[head + vecs * 4 + tid] = -1;
}

// Block 0's warps whose slots hold the rows table (or the counter after it): wait until every block has read
// the table. Only warp 0 reads the global counter; it then opens a shared flag for the other waiting warps.
// (When every such warp polled the counter, the warp whose slots hold the counter could see it complete and
// overwrite it with a position before a slower warp of block 0 had read it; a position below the block count
// left that warp spinning for ever: the rare hang of TileKernels' tests on a shared GPU.)
__device__ __forceinline__ void wait_for_readers(const unsigned *done, unsigned blocks, volatile int *rows_free) {
  if ((threadIdx.x & 31) == 0) {
    if (threadIdx.x == 0) {
      unsigned seen;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(done) : "memory");
      } while (seen < blocks);
      __threadfence_block();
      *rows_free = 1;
    } else {
      while (*rows_free == 0) {
      }
      __threadfence_block();
    }
  }
  __syncwarp();
}

__global__ void __launch_bounds__(kMaxThreads) mapping_kernel(MappingArgs a, MappingGeometry g, DeviceError *err) {
  extern __shared__ int smem[];  // [W][E] warp counts -> prefix over warps -> bases; [E] prefix of earlier
                                 // blocks; [E] global count
  __shared__ int rows_free;      // block 0: every block has read the rows table (wait_for_readers)
  cg::grid_group grid = cg::this_grid();
  const int E = static_cast<int>(a.E), P = static_cast<int>(a.P);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, W = blockDim.x >> 5;
  const int w_shift = 31 - __clz(W);  // W is 8 or 16
  const int nb = gridDim.x, b = blockIdx.x, row = 1 << g.row_shift;
  const unsigned below = (1u << lane) - 1u;
  int *counts = smem, *pre_blocks = smem + W * E, *count_all = pre_blocks + E;
  int *my = counts + warp * E;
  // The rows table: the stream's workspace, else block 0's first slots until step 4 writes them, followed by
  // the count of blocks done reading it (block 0's warps that hold them wait for it: wait_for_readers).
  const bool own_table = g.table != nullptr;
  int *rows = own_table ? g.table : a.token_topk_to_pos;
  unsigned *done = reinterpret_cast<unsigned *>(rows + (nb << g.row_shift));

  const int c0 = static_cast<int>(min(static_cast<int64_t>(b) * g.chunk, static_cast<int64_t>(g.n)));
  const int c1 = static_cast<int>(min(static_cast<int64_t>(c0) + g.chunk, static_cast<int64_t>(g.n)));
  const int w0 = static_cast<int>(
      min(static_cast<int64_t>(c0) + static_cast<int64_t>(warp) * g.warp_len, static_cast<int64_t>(c1)));
  const int w1 = static_cast<int>(min(static_cast<int64_t>(w0) + g.warp_len, static_cast<int64_t>(c1)));
  const bool kept = w1 - w0 <= kSteps * 32;  // the whole sub-chunk stays in v[] for step 4

  // ---- 1. counts ----
  // The first batch's loads are issued before the barrier that orders the zeroing below.
  int v[kSteps];
  int off[kSteps];  // kept: each slot's rank among this warp's slots of its expert (step 4 adds the base)
  bool bad = w0 < w1 && load_batch(v, a.idx, w0, w1, E);
  for (int i = tid; i < W * E + 2 * E; i += blockDim.x) smem[i] = 0;
  if (tid == 0) rows_free = 0;
  __syncthreads();
  for (int f0 = w0; f0 < w1; f0 += kSteps * 32) {  // warp-uniform
    if (f0 != w0) bad = load_batch(v, a.idx, f0, w1, E);
    if (bad) report_batch(a.idx, f0, w1, E, err);
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      if (f0 + s * 32 >= w1) break;  // warp-uniform: only the batch's steps that hold slots
      const unsigned peers = __match_any_sync(kFullMask, v[s]);
      int before = 0;
      if (v[s] >= 0 && (peers & below) == 0) {  // one leader per expert advances the warp's count
        before = my[v[s]];
        my[v[s]] = before + __popc(peers);
      }
      off[s] = __shfl_sync(kFullMask, before, __ffs(peers) - 1) + __popc(peers & below);
      __syncwarp();
    }
  }
  __syncthreads();
  // Per expert, the W warp counts -> exclusive prefix over warps (32 / W experts per warp pass, one lane
  // per warp); the last lane holds the block total.
  int *my_row = rows + (static_cast<int64_t>(b) << g.row_shift);
  if (nb > 1 && b == 0 && tid == 0 && !own_table) *done = 0u;
  for (int e0 = warp << (5 - w_shift); e0 < E; e0 += 32) {  // warp-uniform; 32 / W experts per pass
    const int e = e0 + (lane >> w_shift), w = lane & (W - 1);
    const int x = e < E ? counts[w * E + e] : 0;
    int incl = x;
    for (int o = 1; o < W; o <<= 1) {
      const int y = __shfl_up_sync(kFullMask, incl, o, W);
      if (w >= o) incl += y;
    }
    if (e < E) {
      counts[w * E + e] = incl - x;
      if (w == W - 1) {
        if (nb > 1)
          my_row[e] = incl;
        else
          count_all[e] = incl;
      }
    }
  }
  if (nb > 1) {
    for (int e = E + tid; e < row; e += blockDim.x) my_row[e] = 0;
    grid.sync();
  } else {
    __syncthreads();
  }

  // ---- 2. every block's totals: the global count and the prefix of the earlier blocks ----
  if (nb > 1) {
    const int cells = nb << g.row_shift;
    for (int j0 = tid; j0 < cells; j0 += kRowLoads * blockDim.x) {
      int x[kRowLoads];
#pragma unroll
      for (int k = 0; k < kRowLoads; ++k) {
        const int j = j0 + k * blockDim.x;
        x[k] = j < cells ? __ldcg(rows + j) : 0;
      }
#pragma unroll
      for (int k = 0; k < kRowLoads; ++k) {
        const int j = j0 + k * blockDim.x;
        if (x[k] != 0) {  // zero also for the padding cells of a row (e >= E)
          atomicAdd(&count_all[j & (row - 1)], x[k]);
          if ((j >> g.row_shift) < b) atomicAdd(&pre_blocks[j & (row - 1)], x[k]);
        }
      }
    }
    __syncthreads();  // every load above has delivered its value
    // The block's last thread signals: its warp holds the fewest slots (often none), and the release waits
    // for the block's earlier memory operations, which would hold back warp 0's placement.
    if (!own_table && tid == static_cast<int>(blockDim.x) - 1)
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(done) : "memory");
  }

  // ---- 3. segments (every warp scans the experts itself), this warp's bases, padding rows ----
  const unsigned al = static_cast<unsigned>(a.alignment);
  long long carry = 0;
  for (int c = 0; c < E; c += 32) {  // warp-uniform
    const int e = c + lane;
    const int cnt = e < E ? count_all[e] : 0;
    const long long A = cnt == 0 ? 0 : static_cast<long long>(g.by_alignment.div(cnt - 1) + 1) * al;
    long long incl = A;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const long long y = __shfl_up_sync(kFullMask, incl, o);
      if (lane >= o) incl += y;
    }
    const long long start = carry + incl - A;
    carry += __shfl_sync(kFullMask, incl, 31);
    // Exact whenever the segments fit in P (else the overflow is reported and no base is used).
    const unsigned start32 = static_cast<unsigned>(start);
    if (e < E) {
      my[e] = static_cast<int>(static_cast<unsigned>(my[e]) + start32 + static_cast<unsigned>(pre_blocks[e]));
      if (b == 0 && warp == 0) {
        a.expert_start[e] = static_cast<int32_t>(start32);
        a.expert_end[e] = static_cast<int32_t>(start32 + static_cast<unsigned>(A));
        a.num_tokens_per_expert[e] = static_cast<int32_t>(A);
      }
    }
    // Padding rows [start + cnt, start + A) of expert e: block e % nb, warp (e / nb) % W writes them.
    const unsigned q = g.by_blocks.div(static_cast<unsigned>(e));
    const bool mine = e < E && A > cnt && start + A <= P && static_cast<int>(e - q * nb) == b &&
                      static_cast<int>(q & (W - 1)) == warp;
    write_padding_rows(a, mine, start32, cnt, A);
  }
  const bool overflow = carry > P;
  if (overflow && b == 0 && tid == 0) record_value_error(err, kErrMappingOverflow, carry, 0, P);
  if (!overflow) {  // this block's share of the tail [total, P)
    const int total = static_cast<int>(carry);
    const int share = ((P - total + nb - 1) / nb + 3) & ~3;
    const int t0 =
        static_cast<int>(min(static_cast<int64_t>(total) + static_cast<int64_t>(b) * share, static_cast<int64_t>(P)));
    const int t1 = min(t0 + share, P);
    fill_minus_one(a.pos_to_expert, t0, t1);
    fill_minus_one(a.pos_to_token, t0, t1);
    fill_minus_one(a.pos_to_token_topk, t0, t1);
  }

  // ---- 4. placement ----
  __syncwarp();  // this warp's bases (written by lane e above) are visible to every lane
  bool may_write_rows = own_table || !(nb > 1 && b == 0 && w0 <= (nb << g.row_shift));
  if (kept) {  // one batch, ranked in step 1: base + rank, no second pass over the warp's slots
    int pos[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      pos[s] = -1;
      if (w0 + s * 32 >= w1) break;  // warp-uniform
      const int f = w0 + s * 32 + lane;
      if (v[s] >= 0 && !overflow) pos[s] = my[v[s]] + off[s];
      if (f < w1 && pos[s] >= 0) {
        a.pos_to_expert[pos[s]] = v[s];
        a.pos_to_token[pos[s]] = static_cast<int32_t>(g.by_k.div(static_cast<unsigned>(f)));
        a.pos_to_token_topk[pos[s]] = f;
      }
    }
    if (!may_write_rows) wait_for_readers(done, static_cast<unsigned>(nb), &rows_free);
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
      if (w0 + s * 32 + lane < w1) a.token_topk_to_pos[w0 + s * 32 + lane] = pos[s];
    return;
  }
  for (int f0 = w0; f0 < w1; f0 += kSteps * 32) {  // warp-uniform
    load_batch(v, a.idx, f0, w1, E);               // bad values were reported in step 1
    int pos[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int f = f0 + s * 32 + lane;
      const unsigned peers = __match_any_sync(kFullMask, v[s]);
      pos[s] = -1;
      if (v[s] >= 0 && !overflow) pos[s] = my[v[s]] + __popc(peers & below);
      __syncwarp();
      if (v[s] >= 0 && (peers & below) == 0) my[v[s]] += __popc(peers);  // the lowest peer advances it
      __syncwarp();
      if (f < w1 && pos[s] >= 0) {
        a.pos_to_expert[pos[s]] = v[s];
        a.pos_to_token[pos[s]] = static_cast<int32_t>(g.by_k.div(static_cast<unsigned>(f)));
        a.pos_to_token_topk[pos[s]] = f;
      }
    }
    if (!may_write_rows) {  // the wait overlaps the scattered stores above
      wait_for_readers(done, static_cast<unsigned>(nb), &rows_free);
      may_write_rows = true;
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
      if (f0 + s * 32 + lane < w1) a.token_topk_to_pos[f0 + s * 32 + lane] = pos[s];
  }
}

// ---- get_fused_mapping at small sizes: one thread block cluster (sm_90) ------------------------------------------
//
// Up to kClusterMaxBlocks blocks of kClusterThreads threads launched as ONE cluster, each thread holding at most
// STEPS slots in registers (n <= blocks * kClusterThreads * kClusterMaxSteps). The per-block totals are exchanged
// through distributed shared memory after a cluster barrier: no grid barrier, no table in global memory, no
// workspace (so also under graph capture and on cudaStreamPerThread). The same canonical layout:
//   1. each warp issues the loads of its sub-chunk (STEPS steps of 32 slots) together, zeroes its own row of the
//      [W][E] counts meanwhile, and counts and ranks its slots per expert as mapping_kernel does (step 0 needs no
//      shared-memory read: the row is zero);
//   2. block barrier; thread e turns column e of the counts into an exclusive prefix over the warps (all W loads
//      in flight) and keeps the block's total of expert e for the other blocks;
//   3. cluster barrier; thread e reads expert e's total from every block of the cluster (all loads in flight):
//      the global count and the prefix of the earlier blocks; a scan of the aligned counts over the experts
//      (one warp for E <= 32, else warp scans and one block barrier) gives the segment starts; thread e keeps
//      this block's base of expert e (segment start + earlier blocks) in shared memory;
//   4. block barrier; the expert warps arrive at the cluster's second barrier (their remote reads are done) and
//      block 0's write expert_start, expert_end and num_tokens_per_expert; each slot's position is base + the warp
//      prefix + its rank (token_topk_to_pos, coalesced); the block's rows of expert e are one run of the output, so
//      each slot also goes to shared memory in the block's expert order, and after a block barrier the rows are
//      written in that order: pos_to_* with coalesced stores (one scattered 4-byte store per slot and array cost
//      up to E sectors per warp store, which on 16 SMs bounded the kernel); then the padding rows of the experts
//      this block owns (e % blocks == b) and its share of the tail [total, P); the second cluster barrier's wait
//      before exit keeps the block's shared memory readable until every block has read it.
// Bad ids and an overflow are reported as mapping_kernel reports them (the loads issued before any check).
constexpr int kClusterThreads = 1024;
constexpr int kClusterWarps = kClusterThreads / 32;
constexpr int kClusterMaxBlocks = 16;  // a non-portable cluster size on sm_90 (8 is portable)
// Slots per thread. Measured on an H200 against the cooperative kernel (kernel time, L2 flushed): 1 slot 4.4 against
// 6.7 us (T = 8131 K = 2 E = 9), 2 slots 5.4 against 6.5 (n = 32768), 3 slots 6.3 against 6.6 (n = 49152), 4 slots
// 7.2 against 6.6 (n = 65536): 16 SMs are then short of load and store throughput.
constexpr int kClusterMaxSteps = 3;
constexpr int kColumnLoads = 16;                               // step 2: shared-memory loads in flight per thread
constexpr int kMaxChunk = kClusterMaxSteps * kClusterThreads;  // slots per block
// The staging packs a slot as (f << 10) | expert: f < kClusterMaxBlocks * kMaxChunk must leave the sign bit clear.
static_assert(int64_t{kClusterMaxBlocks} * kMaxChunk <= (int64_t{1} << 21), "slot index does not fit the staging");

struct ClusterGeometry {
  int n;      // T * K
  int chunk;  // slots per block, a multiple of 32, <= STEPS * kClusterThreads
  FastDiv31 by_k, by_alignment, by_blocks;
};

// Dynamic shared memory of mapping_cluster_kernel: [W][E] warp counts (then their prefix over warps), [E] the
// block's totals (read by the other blocks), [E] each expert's first row in the block's staging order, [E] each
// expert's first row of the block in the output, then two [STEPS * 1024] staging arrays (a row's position, its slot
// and expert). E <= 1024 and STEPS <= 3: at most 164 KiB.
constexpr size_t cluster_smem_bytes(int64_t E, int64_t steps) {
  return ((static_cast<size_t>(kClusterWarps) + 3) * static_cast<size_t>(E) +
          2 * static_cast<size_t>(steps) * kClusterThreads) *
         sizeof(int);
}

// The cluster barrier in its two halves, each called by whole warps. A release arrival waits for the warp's earlier
// memory operations (a fence at GPU scope), so only the warps that publish or read distributed shared memory use it.
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// p[0] of block `rank` of the cluster (p: this block's shared memory).
__device__ __forceinline__ int load_cluster_shared(const int *p, unsigned rank) {
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  int x;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(x) : "r"(remote));
  return x;
}

template <int STEPS>
__global__ void __launch_bounds__(kClusterThreads, 1)
    mapping_cluster_kernel(MappingArgs a, ClusterGeometry g, DeviceError *err) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ int smem[];
  __shared__ long long warp_sums[kClusterWarps];  // E > 32: each expert warp's sum of aligned counts
  __shared__ int warp_rows[kClusterWarps];        // E > 32: each expert warp's sum of the block's counts
  __shared__ long long total_rows;                // the sum of the aligned counts
  __shared__ int block_rows;                      // the block's valid slots
  const int E = static_cast<int>(a.E), P = static_cast<int>(a.P);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int nb = gridDim.x, b = blockIdx.x;  // the grid is one cluster: block b is its rank b
  const unsigned below = (1u << lane) - 1u;
  int *counts = smem, *block_total = smem + kClusterWarps * E, *local_start = block_total + E,
      *out_start = local_start + E, *stage_pos = out_start + E, *stage_slot = stage_pos + STEPS * kClusterThreads;
  int *my = counts + warp * E;
  const int c0 = min(b * g.chunk, g.n), c1 = min(c0 + g.chunk, g.n);  // b * chunk <= 16 * 4096
  const int w0 = min(c0 + warp * (STEPS * 32), c1), w1 = min(w0 + STEPS * 32, c1);

  // ---- 1. loads, then counts and ranks ----
  // The loads are issued first; the warp zeroes its row while they are in flight.
  int64_t x[STEPS];
#pragma unroll
  for (int s = 0; s < STEPS; ++s) x[s] = w0 < w1 ? __ldg(a.idx + min(w0 + s * 32 + lane, w1 - 1)) : -1;
  for (int e = lane; e < E; e += 32) my[e] = 0;
  int v[STEPS];
  int off[STEPS] = {};  // each slot's rank among this warp's slots of its expert
  const bool bad = classify_batch(v, x, w0, w1, E);
  __syncwarp();
  if (bad) report_batch(a.idx, w0, w1, E, err);
#pragma unroll
  for (int s = 0; s < STEPS; ++s) {
    if (w0 + s * 32 >= w1) break;  // warp-uniform
    const unsigned peers = __match_any_sync(kFullMask, v[s]);
    const bool leader = v[s] >= 0 && (peers & below) == 0;  // one per expert advances the warp's count
    if (s == 0) {
      if (leader) my[v[s]] = __popc(peers);
      off[s] = __popc(peers & below);
    } else {
      int before = 0;
      if (leader) {
        before = my[v[s]];
        my[v[s]] = before + __popc(peers);
      }
      off[s] = __shfl_sync(kFullMask, before, __ffs(peers) - 1) + __popc(peers & below);
    }
    __syncwarp();
  }
  __syncthreads();

  // ---- 2. per expert: the prefix over warps and the block's total ----
  const int expert_warps = (E + 31) >> 5;  // the warps whose threads stand for experts
  const bool expert_warp = warp < expert_warps;
  int run = 0;  // thread e: the block's count of expert e
  if (tid < E) {
#pragma unroll
    for (int first = 0; first < kClusterWarps; first += kColumnLoads) {
      int col[kColumnLoads];
#pragma unroll
      for (int w = 0; w < kColumnLoads; ++w) col[w] = counts[(first + w) * E + tid];
#pragma unroll
      for (int w = 0; w < kColumnLoads; ++w) {
        counts[(first + w) * E + tid] = run;
        run += col[w];
      }
    }
    block_total[tid] = run;
  }
  // First cluster barrier: the block totals are published (release) and visible to every block (acquire). The
  // other warps publish nothing and read nothing remote: relaxed, and at once their arrival at the second.
  if (expert_warp)
    cluster_arrive_release();
  else
    cluster_arrive_relaxed();
  cluster_wait();
  if (!expert_warp) cluster_arrive_relaxed();

  // ---- 3. every block's totals: the global count, the earlier blocks' prefix, the segments ----
  const unsigned al = static_cast<unsigned>(a.alignment);
  int cnt = 0, pre = 0, rows_incl = run;  // rows_incl: inclusive scan of the block's counts over the experts
  long long A = 0, incl = 0;
  if (expert_warp) {
    if (tid < E) {
      int tot[kClusterMaxBlocks];  // every load unpredicated (ranks past the cluster read its last block, unused)
#pragma unroll
      for (int r = 0; r < kClusterMaxBlocks; ++r) tot[r] = load_cluster_shared(block_total + tid, min(r, nb - 1));
#pragma unroll
      for (int r = 0; r < kClusterMaxBlocks; ++r) {
        cnt += r < nb ? tot[r] : 0;
        pre += r < b ? tot[r] : 0;
      }
      A = cnt == 0 ? 0 : static_cast<long long>(g.by_alignment.div(cnt - 1) + 1) * al;
    }
    incl = A;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const long long y = __shfl_up_sync(kFullMask, incl, o);
      const int z = __shfl_up_sync(kFullMask, rows_incl, o);
      if (lane >= o) incl += y, rows_incl += z;
    }
  }
  if (expert_warps > 1) {  // block-uniform: add the earlier expert warps' sums
    if (expert_warp && lane == 31) warp_sums[warp] = incl, warp_rows[warp] = rows_incl;
    __syncthreads();
    if (expert_warp) {
      long long earlier = lane < warp ? warp_sums[lane] : 0;
      int earlier_rows = lane < warp ? warp_rows[lane] : 0;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        earlier += __shfl_xor_sync(kFullMask, earlier, o);
        earlier_rows += __shfl_xor_sync(kFullMask, earlier_rows, o);
      }
      incl += earlier;
      rows_incl += earlier_rows;
    }
  }
  // Exact whenever the segments fit in P (else the overflow is reported and no base is used).
  const long long start = incl - A;
  const unsigned start32 = static_cast<unsigned>(start);
  if (tid < E) {
    local_start[tid] = rows_incl - run;
    out_start[tid] = static_cast<int>(start32 + static_cast<unsigned>(pre));
    if (tid == E - 1) total_rows = incl, block_rows = rows_incl;
  }
  __syncthreads();
  // Second cluster barrier: the expert warps' reads of the other blocks are done. Arriving here, before the warp's
  // first global store, keeps the release's fence from waiting for stores (and the other warps from waiting for it).
  if (expert_warp) cluster_arrive_release();
  const long long total = total_rows;
  const bool overflow = total > P;
  if (tid < E && b == 0) {
    a.expert_start[tid] = static_cast<int32_t>(start32);
    a.expert_end[tid] = static_cast<int32_t>(start32 + static_cast<unsigned>(A));
    a.num_tokens_per_expert[tid] = static_cast<int32_t>(A);
  }

  // ---- 4. placement: token_topk_to_pos, the staging in the block's expert order, then the rows ----
  // Every shared-memory load of a thread before its first store (the compiler cannot tell the staging from the
  // tables), and none behind the overflow test.
  if (w0 < w1) {  // warp-uniform
    int pos[STEPS], local[STEPS];
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
      pos[s] = -1, local[s] = 0;
      if (w0 + s * 32 < w1 && v[s] >= 0) {     // (the first test warp-uniform)
        const int within = my[v[s]] + off[s];  // the slot's rank among the block's slots of its expert
        pos[s] = out_start[v[s]] + within;
        local[s] = local_start[v[s]] + within;
      }
    }
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
      if (w0 + s * 32 >= w1) break;  // warp-uniform
      const int f = w0 + s * 32 + lane;
      const bool placed = pos[s] >= 0 && !overflow;
      if (placed) {
        stage_pos[local[s]] = pos[s];
        stage_slot[local[s]] = (f << 10) | v[s];  // f < 2^21, v < 2^10
      }
      if (f < w1) a.token_topk_to_pos[f] = placed ? pos[s] : -1;
    }
  }
  __syncthreads();
  if (!overflow) {  // block-uniform: the block's rows in expert order, consecutive rows of a run consecutive
    const int rows = block_rows;
    int pos[STEPS], slot[STEPS];
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {  // loaded whatever `rows` (the arrays hold STEPS * 1024): no wait for it
      pos[s] = stage_pos[tid + s * kClusterThreads];
      slot[s] = stage_slot[tid + s * kClusterThreads];
    }
#pragma unroll
    for (int s = 0; s < STEPS; ++s)
      if (tid + s * kClusterThreads < rows) {
        const int f = static_cast<int>(static_cast<unsigned>(slot[s]) >> 10);
        a.pos_to_expert[pos[s]] = slot[s] & 1023;
        a.pos_to_token[pos[s]] = static_cast<int32_t>(g.by_k.div(static_cast<unsigned>(f)));
        a.pos_to_token_topk[pos[s]] = f;
      }
  }
  if (expert_warp) {  // warp-uniform: padding rows [start + cnt, start + A) of this block's experts
    const unsigned q = g.by_blocks.div(static_cast<unsigned>(tid));
    const bool mine = tid < E && A > cnt && start + A <= P && static_cast<int>(tid - q * nb) == b;
    write_padding_rows(a, mine, start32, cnt, A);
  }
  if (overflow && b == 0 && tid == 0) record_value_error(err, kErrMappingOverflow, total, 0, P);
  if (!overflow) {  // this block's share of the tail [total, P)
    const int used = static_cast<int>(total);
    const int share = (static_cast<int>(g.by_blocks.div(static_cast<unsigned>(P - used + nb - 1))) + 3) & ~3;
    const int t0 =
        static_cast<int>(min(static_cast<int64_t>(used) + static_cast<int64_t>(b) * share, static_cast<int64_t>(P)));
    const int t1 = min(t0 + share, P);
    fill_minus_one(a.pos_to_expert, t0, t1);
    fill_minus_one(a.pos_to_token, t0, t1);
    fill_minus_one(a.pos_to_token_topk, t0, t1);
  }
  cluster_wait();  // no block exits while another may still read its totals
#else
  __trap();  // never launched: cluster_reach() finds no sm_90 code
#endif
}

// ---- expand_to_fused(_with_sf): streaming copies with 16-byte accesses ----------------------------------------

constexpr int kExpandThreads = 128;
constexpr int kMaxSlots = 32;  // destinations per pass: one warp compacts them (more are done in passes)

// Blocks [0, ceil(P / kExpandThreads)) zero the padding rows (pos_to_expert < 0) of kExpandThreads fused rows
// each: one coalesced load of their pos_to_expert, then the padding rows among them; the T blocks after them
// copy token b's row x[b] to each of its fused rows. (Padding blocks last made a tail: 8.6 µs more at the
// spec's shape, 240.0 against 231.4.) (One block per fused row, TileKernels' layout too, spends a
// block launch and a dependent load on each of the P - T rows that are not padding: 41.5 k of 49.5 k blocks at
// the spec's shape.) V is the access width (uint4 when rows and bases allow, else narrower).
//
// A copy makes one memory round trip before its stores: each thread issues the loads of its first
// kExpandLoads vectors of the row (and its first sf word) before the positions are known, while warp 0 loads
// the token's K positions (one per lane, not one after another) and compacts the valid ones into shared
// memory; after the barrier the row goes to every destination.
constexpr int kExpandLoads = 8;

template <class V>
__device__ __forceinline__ void expand_zero_padding(const ExpandArgs &a, int64_t r0) {
  __shared__ int64_t rows[kExpandThreads];
  __shared__ int nrows;
  if (threadIdx.x == 0) nrows = 0;
  __syncthreads();
  const int64_t r = r0 + threadIdx.x;
  if (r < a.P && __ldg(a.pos_to_expert + r) < 0) rows[atomicAdd(&nrows, 1)] = r;  // any order
  __syncthreads();
  const int n = nrows;
  const int64_t row_bytes = a.H * a.esize;
  const int64_t nv = row_bytes / static_cast<int64_t>(sizeof(V));
  V z;
  memset(&z, 0, sizeof z);
  for (int i = 0; i < n; ++i) {
    const int64_t b = rows[i];
    V *o = reinterpret_cast<V *>(static_cast<char *>(a.out) + b * row_bytes);
    for (int64_t v = threadIdx.x; v < nv; v += blockDim.x) o[v] = z;
    if (a.sf_out)
      for (int64_t j = threadIdx.x; j < a.hsf; j += blockDim.x)
        a.sf_out[a.col_major ? j * a.P4 + b : b * a.hsf + j] = 0u;
  }
}

template <class V>
__global__ void __launch_bounds__(kExpandThreads) expand_kernel(const ExpandArgs a, DeviceError *err) {
  __shared__ int64_t dst[kMaxSlots];
  __shared__ int ndst;
  // The padding blocks come first, so that their stores overlap the copies instead of trailing them.
  const int64_t pad_blocks = (a.P + kExpandThreads - 1) / kExpandThreads;
  if (static_cast<int64_t>(blockIdx.x) < pad_blocks) {
    expand_zero_padding<V>(a, static_cast<int64_t>(blockIdx.x) * kExpandThreads);
    return;
  }
  const int64_t b = blockIdx.x - pad_blocks;  // the token
  const int64_t row_bytes = a.H * a.esize;
  const int64_t nv = row_bytes / static_cast<int64_t>(sizeof(V));
  const int64_t bd = blockDim.x;
  const V *src = reinterpret_cast<const V *>(static_cast<const char *>(a.x) + b * row_bytes);
  const int lane = static_cast<int>(threadIdx.x & 31);
  for (int64_t k0 = 0; k0 < a.K; k0 += kMaxSlots) {
    V r[kExpandLoads];
#pragma unroll
    for (int u = 0; u < kExpandLoads; ++u)
      if (threadIdx.x + u * bd < nv) r[u] = src[threadIdx.x + u * bd];
    const bool has_sf = a.sf_out && static_cast<int64_t>(threadIdx.x) < a.hsf;
    const uint32_t s0 = has_sf ? __ldg(a.x_sf + b * a.hsf + threadIdx.x) : 0u;
    __syncthreads();  // the previous pass's destinations are used
    if (threadIdx.x < 32) {
      const int64_t k = k0 + lane;
      int64_t q = -1;
      if (k < a.K) {
        q = __ldg(a.pos + b * a.K + k);
        if (q < -1 || q >= a.P) {
          record_value_error(err, kErrPosRange, q, b * a.K + k, a.P);
          q = -1;
        }
      }
      const unsigned valid = __ballot_sync(kFullMask, q >= 0);
      if (q >= 0) dst[__popc(valid & ((1u << lane) - 1u))] = q;
      if (lane == 0) ndst = __popc(valid);
    }
    __syncthreads();
    const int m = ndst;
#pragma unroll
    for (int u = 0; u < kExpandLoads; ++u)
      if (threadIdx.x + u * bd < nv)
        for (int d = 0; d < m; ++d)
          reinterpret_cast<V *>(static_cast<char *>(a.out) + dst[d] * row_bytes)[threadIdx.x + u * bd] = r[u];
    for (int64_t i = threadIdx.x + kExpandLoads * bd; i < nv; i += bd) {  // rows beyond the first loads
      const V v = src[i];
      for (int d = 0; d < m; ++d) reinterpret_cast<V *>(static_cast<char *>(a.out) + dst[d] * row_bytes)[i] = v;
    }
    if (a.sf_out)
      for (int64_t j = threadIdx.x; j < a.hsf; j += bd) {
        const uint32_t sv = j == static_cast<int64_t>(threadIdx.x) ? s0 : __ldg(a.x_sf + b * a.hsf + j);
        for (int d = 0; d < m; ++d) a.sf_out[a.col_major ? j * a.P4 + dst[d] : dst[d] * a.hsf + j] = sv;
      }
  }
}

template <class V>
void launch_expand_v(const ExpandArgs &a, const LaunchCtx &c) {
  const unsigned grid = static_cast<unsigned>(a.T + (a.P + kExpandThreads - 1) / kExpandThreads);
  expand_kernel<V><<<grid, kExpandThreads, 0, c.stream>>>(a, c.err);
}
}  // namespace

namespace {

// What mapping_cluster_kernel can do on one device: its largest cluster (16 blocks where one can be resident, else
// the portable 8, else 0: no cluster path) and the largest E whose shared memory it can be given.
struct ClusterReach {
  int blocks = 0;
  int max_experts = 0;
};

using ClusterKernel = void (*)(MappingArgs, ClusterGeometry, DeviceError *);
constexpr ClusterKernel kClusterKernels[kClusterMaxSteps] = {mapping_cluster_kernel<1>, mapping_cluster_kernel<2>,
                                                             mapping_cluster_kernel<3>};

// Asked of the current device (== device), once per device. CUDA errors met here are cleared: they only mean
// "no cluster path".
ClusterReach find_cluster_reach(int device, int cc_major) {
  ClusterReach r;
  if (cc_major < 9) return r;
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return r;
  }
  int max_experts = 1024;
  for (ClusterKernel k : kClusterKernels) {
    cudaFuncAttributes attr{};
    // The kernel's code must come from sm_90 or later: one compiled from an older PTX (JIT on this device, so
    // its binaryVersion is the device's) has no cluster code.
    if (cudaFuncGetAttributes(&attr, k) != cudaSuccess || attr.binaryVersion < 90 || attr.ptxVersion < 90) {
      (void)cudaGetLastError();
      return r;
    }
    const int64_t room = static_cast<int64_t>(optin) - static_cast<int64_t>(attr.sharedSizeBytes) -
                         static_cast<int64_t>(cluster_smem_bytes(0, kClusterMaxSteps));
    max_experts =
        static_cast<int>(std::min<int64_t>(max_experts, room / static_cast<int64_t>(cluster_smem_bytes(1, 0))));
  }
  if (max_experts < 1) return r;
  const size_t smem = cluster_smem_bytes(max_experts, kClusterMaxSteps);
  for (ClusterKernel k : kClusterKernels)
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess) {
      (void)cudaGetLastError();
      return r;
    }
  for (int blocks : {kClusterMaxBlocks, 8}) {
    bool fits = true;
    for (ClusterKernel k : kClusterKernels) {
      if (blocks > 8 && cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
        fits = false;
        break;
      }
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(static_cast<unsigned>(blocks));
      cfg.blockDim = dim3(kClusterThreads);
      cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = static_cast<unsigned>(blocks);
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, k, &cfg) != cudaSuccess || clusters < 1) {
        fits = false;
        break;
      }
    }
    (void)cudaGetLastError();
    if (fits) {
      r.blocks = blocks;
      r.max_experts = max_experts;
      return r;
    }
  }
  return r;
}

ClusterReach cluster_reach(int device, int cc_major) {
  static std::mutex *mu = new std::mutex;  // never destroyed, like the device cache (core/device.cc)
  static auto *known = new std::vector<std::pair<bool, ClusterReach>>;
  std::lock_guard<std::mutex> lock(*mu);
  if (static_cast<size_t>(device) >= known->size()) known->resize(static_cast<size_t>(device) + 1);
  std::pair<bool, ClusterReach> &slot = (*known)[static_cast<size_t>(device)];
  if (!slot.first) {
    // The first call may come under another thread's (or this one's) stream capture: relaxed mode, so that the
    // attribute and occupancy queries cannot invalidate it.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
      (void)cudaGetLastError();
      return ClusterReach{};  // asked again next time
    }
    slot = {true, find_cluster_reach(device, cc_major)};
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
  }
  return slot.second;
}

// mapping_cluster_kernel where it fits: E within its shared memory, n within blocks * kClusterThreads *
// kClusterMaxSteps for the blocks the device (and the SM-count override) allow. Sets *launched when it took the
// call; a refused launch is cleared and left to the cooperative kernel.
Status launch_mapping_cluster(const MappingArgs &a, const LaunchCtx &c, bool *launched) {
  *launched = false;
  const ClusterReach reach = cluster_reach(c.device, c.cc_major);
  const int64_t n = a.T * a.K;
  const int64_t cap = std::min(reach.blocks, c.num_sms);
  if (cap < 1 || a.E > reach.max_experts) return kSuccess;
  const int64_t nb = std::min(cap, std::max<int64_t>(1, (n + kClusterThreads - 1) / kClusterThreads));
  const int64_t chunk = ((n + nb - 1) / nb + 31) / 32 * 32;
  const int64_t steps = std::max<int64_t>(1, (chunk + kClusterThreads - 1) / kClusterThreads);
  if (steps > kClusterMaxSteps) return kSuccess;
  ClusterGeometry g{};
  g.n = static_cast<int>(n);
  g.chunk = static_cast<int>(chunk);
  g.by_k = FastDiv31::make(static_cast<uint32_t>(a.K));
  g.by_alignment = FastDiv31::make(static_cast<uint32_t>(a.alignment));  // <= INT32_MAX (API)
  g.by_blocks = FastDiv31::make(static_cast<uint32_t>(nb));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(nb));
  cfg.blockDim = dim3(kClusterThreads);
  cfg.dynamicSmemBytes = cluster_smem_bytes(a.E, steps);
  cfg.stream = c.stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(nb);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, kClusterKernels[steps - 1], a, g, c.err) != cudaSuccess) {
    (void)cudaGetLastError();  // not the caller's error: the cooperative kernel takes the call
    return kSuccess;
  }
  *launched = true;
  return kSuccess;
}

}  // namespace

Status launch_get_fused_mapping(const MappingArgs &a, const LaunchCtx &c) {
  // Up to 48 k slots (16 blocks x 1024 threads x 3 slots; 8 blocks where a cluster of 16 cannot be resident, and no
  // more blocks than the SM-count override): one thread block cluster. Above, or where no cluster can run: one
  // cooperative kernel.
  bool launched = false;
  MOE_TRY(launch_mapping_cluster(a, c, &launched));
  if (launched) return kSuccess;
  const int64_t n = a.T * a.K;
  const int E = static_cast<int>(a.E);
  // 16 warps (fewer warps wait at each block barrier than with 32; more slots per warp in flight than with
  // 8), 8 when the [W][E] table would pass 48 KB (E > 682).
  int threads = kMaxThreads;
  if ((static_cast<size_t>(threads / 32) * E + 2 * static_cast<size_t>(E)) * 4 > 48 * 1024) threads /= 2;
  MappingGeometry g{};
  g.row_shift = 3;
  while ((1 << g.row_shift) < E) ++g.row_shift;
  // Blocks: at most one per SM (co-resident for the cooperative launch), >= 1024 slots each, at most
  // kMappingTableCells table cells (what the workspace holds, and each block reads them all in step 2);
  // without a stream workspace for the table, block 0's slots must hold it and its counter.
  void *workspace = nullptr;
  MOE_TRY(stream_workspace(c.device, c.stream, &workspace));
  int64_t nb = c.num_sms;
  nb = std::min<int64_t>(nb, std::max<int64_t>(1, static_cast<int64_t>(kMappingTableCells) >> g.row_shift));
  nb = std::min<int64_t>(nb, std::max<int64_t>(1, n / 1024));
  if (workspace == nullptr)
    while (nb > 1 && (n + nb - 1) / nb < (nb << g.row_shift) + 1) --nb;
  g.table = workspace ? reinterpret_cast<int *>(static_cast<char *>(workspace) + kMappingTableOffset) : nullptr;
  const int64_t chunk = std::max<int64_t>(1, (n + nb - 1) / nb);
  const int64_t W = threads / 32;
  g.n = static_cast<int>(n);
  g.chunk = static_cast<int>(chunk);
  g.warp_len = static_cast<int>(((chunk + W - 1) / W + 31) / 32 * 32);
  g.by_k = FastDiv31::make(static_cast<uint32_t>(a.K));
  g.by_alignment = FastDiv31::make(static_cast<uint32_t>(a.alignment));  // <= INT32_MAX (API)
  g.by_blocks = FastDiv31::make(static_cast<uint32_t>(nb));
  const size_t smem = (static_cast<size_t>(W) * E + 2 * static_cast<size_t>(E)) * 4;
  MappingArgs args = a;
  DeviceError *err = c.err;
  void *params[] = {&args, &g, &err};
  MOE_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(mapping_kernel), dim3(static_cast<unsigned>(nb)),
                                       dim3(static_cast<unsigned>(threads)), params, smem, c.stream));
  return kSuccess;
}

Status launch_expand(const ExpandArgs &a, const LaunchCtx &c) {
  const uintptr_t align =
      reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.out) | static_cast<uintptr_t>(a.H * a.esize);
  if (align % 16 == 0)
    launch_expand_v<uint4>(a, c);
  else if (align % 4 == 0)
    launch_expand_v<uint32_t>(a, c);
  else
    launch_expand_v<uint8_t>(a, c);
  return kSuccess;
}
}  // namespace tshmem_moe
