// The data kernels of dispatch (dispatch/dispatch.h). Send: each warp takes tokens t = warp, warp + warps, ...
// and writes the token's row into every destination PE's receive area at the row the notify assigned it
// (dst_offset[p] + send_index[t][p]): through the peer pointer for a PE of this node (16-byte stores over
// NVLink), else packed into this PE's staging area and put with tshmem::putmem_nbi (the off-node proxy): one put
// per PE of another node when the rows for all of them fit the staging area side by side, else one per row.
// Wait: one block waits for every PE's signal. Receive: warps copy the rows out into the caller's tensors.
#include <cstdio>

#include "core/kernels.h"
#include "core/kernels_common.cuh"
#include "core/routes.h"
#include "dispatch/dispatch.h"
#include "tshmem/ep.h"

namespace tshmem_ep {
namespace {

/// Packs token t's row at `out` (a peer's receive area or the local staging area). All lanes of one warp.
__device__ __forceinline__ void write_row(char *out, const DispatchParams &p, int64_t t, int lane) {
  const DispatchRow &r = p.row;
  warp_copy16(out, p.x + t * static_cast<int64_t>(r.x_bytes), r.x_bytes, lane);
  if (r.scales_bytes)
    warp_copy4(out + r.scales_off, p.scales + t * static_cast<int64_t>(r.scales_bytes / 4), r.scales_bytes / 4, lane);
  const int k = static_cast<int>(r.idx_bytes / sizeof(int64_t));
  if (lane < k) {
    reinterpret_cast<int64_t *>(out + r.idx_off)[lane] = p.topk_idx[t * k + lane];
    reinterpret_cast<float *>(out + r.weights_off)[lane] = p.topk_weights[t * k + lane];
  }
  if (lane == 0) *reinterpret_cast<int32_t *>(out + r.src_off) = static_cast<int32_t>(t);
}

__global__ void __launch_bounds__(kDataThreads) dispatch_send_kernel(const __grid_constant__ DispatchParams p) {
  // Rows for PEs of other nodes are staged by destination when they all fit: PE q's at stage_base[q] + send
  // index, in the order they take at q, so the last block puts each PE's rows in one request. Otherwise each
  // token is staged once at its index and put row by row.
  __shared__ int64_t stage_base[TSHMEM_EP_MAX_PES];
  __shared__ bool by_destination;
  if (threadIdx.x == 0) {
    int64_t total = 0;
    for (int q = 0; q < p.n_pes && p.staging; ++q)
      if (!tshmem::ptr(p.recv_area, q)) {
        stage_base[q] = total;
        total += p.send_counts[q];
      }
    by_destination = p.staging && total <= p.staging_rows;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); t < p.num_tokens;
       t += warps) {
    char *stage = p.staging && t < p.staging_rows ? p.staging + t * static_cast<int64_t>(p.row.stride) : nullptr;
    bool staged = false;
    for (int q = 0; q < p.n_pes; ++q) {
      const int32_t si = p.send_index[t * p.n_pes + q];
      if (si < 0) continue;
      const int64_t row = route_dispatch_row(p.info, p.il, q, si);
      if (row >= p.area_rows) {
        if (lane == 0) record_error(p.err, kRecvOverflow, row + 1, p.area_rows);
        continue;
      }
      char *dst = p.recv_area + row * static_cast<int64_t>(p.row.stride);
      char *peer = tshmem::ptr(dst, q);
      if (peer) {
        write_row(peer, p, t, lane);
        continue;
      }
      if (by_destination) {
        write_row(p.staging + (stage_base[q] + si) * static_cast<int64_t>(p.row.stride), p, t, lane);
        continue;
      }
      if (!stage) {  // another node, and no staging room for this token (the host checks make this unreachable)
        if (lane == 0) record_error(p.err, kRecvOverflow, t + 1, 0);
        continue;
      }
      if (!staged) {
        write_row(stage, p, t, lane);
        __threadfence_system();  // the proxy reads the staged row with a copy engine
        __syncwarp();
        staged = true;
      }
      tshmem::putmem_nbi<tshmem::warp_scope>(dst, stage, p.row.stride, q);
    }
  }
  // Staged by destination: the last block to finish puts each PE's rows of another node in one request.
  finish_and_signal(p.counter, p.sig, p.my_pe, p.n_pes, [&] {
    if (!by_destination) return;
    for (int q = 0; q < p.n_pes; ++q) {
      char *dst = p.recv_area + static_cast<int64_t>(p.info[p.il.dst_offset + q]) * p.row.stride;
      if (tshmem::ptr(dst, q)) continue;
      const int64_t row0 = p.info[p.il.dst_offset + q];
      int64_t rows = p.send_counts[q];
      if (row0 + rows > p.area_rows) rows = p.area_rows > row0 ? p.area_rows - row0 : 0;  // recorded above
      if (rows <= 0) continue;
      tshmem::putmem_nbi(dst, p.staging + stage_base[q] * static_cast<int64_t>(p.row.stride),
                         static_cast<size_t>(rows) * p.row.stride, q);
    }
  });
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Bounded: a PE that never signals (it failed before the call, or stopped) ends the wait after timeout_ms with a
// message naming both PEs and the step, then a trap (the context is lost, as with tshmem's own bounded waits).
// timeout_ms 0: tshmem's wait (bounded by TSHMEM_WAIT_TIMEOUT_MS, if set).
__global__ void wait_signals_kernel(uint64_t *sig, int n_pes, int my_pe, uint64_t timeout_ms, int step) {
  for (int s = threadIdx.x; s < n_pes; s += blockDim.x) {
    if (timeout_ms == 0) {
      tshmem::signal_wait_until(sig + s, TSHMEM_CMP_EQ, 1);
    } else {
      const uint64_t start = global_ns();
      while (!tshmem::test(sig + s, TSHMEM_CMP_EQ, uint64_t{1})) {
        if (global_ns() - start > timeout_ms * 1000000ull) {
          printf(
              "tshmem_ep: %s on PE %d: no signal from PE %d after %llu ms (it did not make the same call, or it "
              "failed; tshmem_ep_buffer_set_timeout_ms sets the bound)\n",
              step == 0 ? "tshmem_ep_dispatch" : "tshmem_ep_combine", my_pe, s,
              static_cast<unsigned long long>(timeout_ms));
          __trap();
        }
        __nanosleep(100);
      }
    }
    sig[s] = 0;  // the next use is behind a barrier or an all-gather of every PE
  }
}

__global__ void __launch_bounds__(kDataThreads) dispatch_recv_kernel(const __grid_constant__ DispatchParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const DispatchRow &r = p.row;
  const int k = static_cast<int>(r.idx_bytes / sizeof(int64_t));
  const int64_t num_recv = p.info[0];
  const int64_t lo = static_cast<int64_t>(p.my_pe) * p.local_experts;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); j < p.recv_capacity;
       j += warps) {
    if (j < num_recv && j < p.area_rows) {
      const char *src = p.recv_area + j * static_cast<int64_t>(r.stride);
      warp_copy16(p.recv_x + j * static_cast<int64_t>(r.x_bytes), src, r.x_bytes, lane);
      if (r.scales_bytes)
        warp_copy4(p.recv_scales + j * static_cast<int64_t>(r.scales_bytes / 4), src + r.scales_off, r.scales_bytes / 4,
                   lane);
      if (lane < k) {
        const int64_t e = reinterpret_cast<const int64_t *>(src + r.idx_off)[lane];
        const int64_t local = e >= lo && e < lo + p.local_experts ? e - lo : -1;
        if (p.recv_topk_idx) p.recv_topk_idx[j * k + lane] = local;
        if (p.recv_topk_weights)
          p.recv_topk_weights[j * k + lane] =
              local >= 0 ? reinterpret_cast<const float *>(src + r.weights_off)[lane] : 0.0f;
      }
      if (lane == 0 && p.recv_src_idx) p.recv_src_idx[j] = *reinterpret_cast<const int32_t *>(src + r.src_off);
    } else {
      if (lane < k) {
        if (p.recv_topk_idx) p.recv_topk_idx[j * k + lane] = -1;
        if (p.recv_topk_weights) p.recv_topk_weights[j * k + lane] = 0.0f;
      }
      if (lane == 0 && p.recv_src_idx) p.recv_src_idx[j] = -1;
    }
  }
}

unsigned grid_for(int64_t items, int blocks) {
  const int64_t need = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(need < 1 ? 1 : need < blocks ? need : blocks);
}

}  // namespace

cudaError_t launch_dispatch_send(const DispatchParams &p, int blocks, cudaStream_t stream) {
  dispatch_send_kernel<<<grid_for(p.num_tokens, blocks), kDataThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_wait_signals(uint64_t *sig, int n_pes, int my_pe, uint64_t timeout_ms, int step,
                                cudaStream_t stream) {
  const unsigned threads = n_pes < 1024 ? static_cast<unsigned>((n_pes + 31) / 32 * 32) : 1024u;
  wait_signals_kernel<<<1, threads, 0, stream>>>(sig, n_pes, my_pe, timeout_ms, step);
  return cudaGetLastError();
}

cudaError_t launch_dispatch_recv(const DispatchParams &p, int blocks, cudaStream_t stream) {
  if (p.recv_capacity == 0) return cudaSuccess;
  dispatch_recv_kernel<<<grid_for(p.recv_capacity, blocks), kDataThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

KernelSet dispatch_kernels() {
  static const KernelRef kKernels[] = {
      {reinterpret_cast<const void *>(&dispatch_send_kernel), "dispatch_send_kernel"},
      {reinterpret_cast<const void *>(&wait_signals_kernel), "wait_signals_kernel"},
      {reinterpret_cast<const void *>(&dispatch_recv_kernel), "dispatch_recv_kernel"},
  };
  return {kKernels, sizeof kKernels / sizeof kKernels[0]};
}

}  // namespace tshmem_ep
