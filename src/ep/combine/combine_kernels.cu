// The data kernels of combine (combine/combine.h). Send mirrors dispatch's: received row j came from PE s as its
// (j - recv_offset[s])-th row for this PE, so it returns to s's receive area at comb_dst_offset[s] + that index,
// through the peer pointer on this node, or staged at j and, once every block is done, put with the other rows
// for s in one request through the off-node proxy. Reduce: one warp per home
// token, each lane 8 channels at a time: the rows from PEs 0, 1, ..., n-1 that hold the token (send map) are
// added in that order in fp32, then the biases, then one round-to-nearest-even to bf16: the CPU reference's
// operations in the reference's order, so the results are equal bit for bit and do not depend on timing.
#include <cuda_bf16.h>

#include "combine/combine.h"
#include "core/kernels.h"
#include "core/kernels_common.cuh"
#include "core/routes.h"
#include "dispatch/dispatch.h"
#include "tshmem/ep.h"

namespace tshmem_ep {
namespace {

__device__ __forceinline__ void write_row(char *out, const CombineParams &p, int64_t j, int lane) {
  warp_copy16(out, p.x + j * static_cast<int64_t>(p.row.x_bytes), p.row.x_bytes, lane);
  if (p.topk_weights && lane < p.num_topk)
    reinterpret_cast<float *>(out + p.row.weights_off)[lane] = p.topk_weights[j * p.num_topk + lane];
}

__global__ void __launch_bounds__(kDataThreads) combine_send_kernel(const __grid_constant__ CombineParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t num_recv = p.info[0] < p.num_rows ? p.info[0] : p.num_rows;  // more: recorded by the notify
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); j < num_recv; j += warps) {
    int s = 0;
    const int64_t row = route_combine_row(p.info, p.il, p.n_pes, j, &s);
    if (row >= p.area_rows) {
      if (lane == 0) record_error(p.err, kCombineOverflow, row + 1, p.area_rows);
      continue;
    }
    char *dst = p.area + row * static_cast<int64_t>(p.row.stride);
    char *peer = tshmem::ptr(dst, s);
    if (peer) {
      write_row(peer, p, j, lane);
      continue;
    }
    if (!p.staging || j >= p.staging_rows) {
      if (lane == 0) record_error(p.err, kCombineOverflow, j + 1, p.staging_rows);
      continue;
    }
    // Staged at j: the rows for one home PE are contiguous here and at the home PE, so the last block puts each
    // home PE's rows in one request (below) rather than one per row through the proxy.
    write_row(p.staging + j * static_cast<int64_t>(p.row.stride), p, j, lane);
  }
  // The last block to finish puts each home PE's rows of another node in one request.
  finish_and_signal(p.counter, p.sig, p.my_pe, p.n_pes, [&] {
    const int32_t *recv_offset = p.info + p.il.recv_offset;
    for (int s = 0; s < p.n_pes && p.staging; ++s) {
      const int64_t j0 = recv_offset[s];
      int64_t j1 = recv_offset[s + 1];
      if (j1 > num_recv) j1 = num_recv;
      if (j1 > p.staging_rows) j1 = p.staging_rows;  // rows beyond were recorded as overflows above
      const int64_t row0 = p.info[p.il.comb_dst_offset + s];
      if (row0 + (j1 - j0) > p.area_rows) j1 = j0 + (p.area_rows > row0 ? p.area_rows - row0 : 0);
      if (j1 <= j0) continue;
      char *dst = p.area + row0 * static_cast<int64_t>(p.row.stride);
      if (tshmem::ptr(dst, s)) continue;  // this node: written through the peer pointer above
      tshmem::putmem_nbi(dst, p.staging + j0 * static_cast<int64_t>(p.row.stride),
                         static_cast<size_t>(j1 - j0) * p.row.stride, s);
    }
  });
}

__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

__device__ __forceinline__ void add8(float (&acc)[8], const uint4 v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc[2 * i] += bf16_bits_to_float(w[i] & 0xffffu);
    acc[2 * i + 1] += bf16_bits_to_float(w[i] >> 16);
  }
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  const uint32_t a = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return a | (b << 16);
}

// Chunks of 8 channels per lane summed together: each PE's row gives kReduceChunks independent loads per lane, all
// in flight before their adds (one chunk at a time made every load of the row a round trip of its own).
constexpr int kReduceChunks = 4;

__global__ void __launch_bounds__(kDataThreads) combine_reduce_kernel(const __grid_constant__ CombineParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t chunks = p.hidden / 8;
  const size_t stride = p.row.stride;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); t < p.num_tokens;
       t += warps) {
    const int32_t *sends = p.send_index + t * p.n_pes;
    for (int64_t c0 = lane; c0 < chunks; c0 += 32 * kReduceChunks) {
      float acc[kReduceChunks][8] = {};
      // The same operations per channel as one chunk at a time: the rows in PE order, then the biases.
      for (int q = 0; q < p.n_pes; ++q) {
        const int32_t si = sends[q];
        if (si < 0) continue;
        const int64_t row = route_home_row(p.info, p.il, q, si);
        if (row >= p.area_rows) continue;  // not written: the sender recorded the overflow
        const uint4 *src = reinterpret_cast<const uint4 *>(p.area + row * static_cast<int64_t>(stride));
        uint4 v[kReduceChunks];
#pragma unroll
        for (int u = 0; u < kReduceChunks; ++u)
          if (c0 + 32 * u < chunks) v[u] = src[c0 + 32 * u];
#pragma unroll
        for (int u = 0; u < kReduceChunks; ++u)
          if (c0 + 32 * u < chunks) add8(acc[u], v[u]);
      }
#pragma unroll
      for (int u = 0; u < kReduceChunks; ++u) {
        const int64_t c = c0 + 32 * u;
        if (c >= chunks) break;
        if (p.bias0) add8(acc[u], reinterpret_cast<const uint4 *>(p.bias0 + t * p.hidden)[c]);
        if (p.bias1) add8(acc[u], reinterpret_cast<const uint4 *>(p.bias1 + t * p.hidden)[c]);
        uint4 o;
        o.x = pack2(acc[u][0], acc[u][1]);
        o.y = pack2(acc[u][2], acc[u][3]);
        o.z = pack2(acc[u][4], acc[u][5]);
        o.w = pack2(acc[u][6], acc[u][7]);
        reinterpret_cast<uint4 *>(p.out + t * p.hidden * 2)[c] = o;
      }
    }
    if (p.out_weights && lane < p.num_topk) {
      float w = 0.f;
      for (int q = 0; q < p.n_pes; ++q) {
        const int32_t si = sends[q];
        if (si < 0) continue;
        const int64_t row = route_home_row(p.info, p.il, q, si);
        if (row >= p.area_rows) continue;
        w += reinterpret_cast<const float *>(p.area + row * static_cast<int64_t>(stride) + p.row.weights_off)[lane];
      }
      p.out_weights[t * p.num_topk + lane] = w;
    }
  }
}

unsigned grid_for(int64_t items, int blocks) {
  const int64_t need = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(need < 1 ? 1 : need < blocks ? need : blocks);
}

}  // namespace

cudaError_t launch_combine_send(const CombineParams &p, int blocks, cudaStream_t stream) {
  // The number of received rows is on the device: the grid is the buffer's block count (blocks without rows only
  // count themselves in before the last one signals).
  combine_send_kernel<<<static_cast<unsigned>(blocks), kDataThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_combine_reduce(const CombineParams &p, int blocks, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  combine_reduce_kernel<<<grid_for(p.num_tokens, blocks), kDataThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

KernelSet combine_kernels() {
  static const KernelRef kKernels[] = {
      {reinterpret_cast<const void *>(&combine_send_kernel), "combine_send_kernel"},
      {reinterpret_cast<const void *>(&combine_reduce_kernel), "combine_reduce_kernel"},
  };
  return {kKernels, sizeof kKernels / sizeof kKernels[0]};
}

}  // namespace tshmem_ep
