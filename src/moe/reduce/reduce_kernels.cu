// CUDA kernels of the reduce family (docs/moe.md, "Reduction"): reduce_fused, a streaming gather with 16-byte
// accesses, fmaf in slot order.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "core/kernels_common.cuh"
#include "reduce/reduce.h"

namespace tshmem_moe {
namespace {

// 8 consecutive elements of row p, loaded raw (16 bytes of bf16 or 32 of fp32) so that several rows can be in
// flight before any is converted.
template <bool BF16>
struct Raw8 {
  uint4 q[BF16 ? 1 : 2];
};

template <bool BF16>
__device__ __forceinline__ Raw8<BF16> load8(const void *x, int64_t off) {
  Raw8<BF16> r;
  if constexpr (BF16) {
    r.q[0] = __ldg(reinterpret_cast<const uint4 *>(static_cast<const __nv_bfloat16 *>(x) + off));
  } else {
    const uint4 *p = reinterpret_cast<const uint4 *>(static_cast<const float *>(x) + off);
    r.q[0] = __ldg(p);
    r.q[1] = __ldg(p + 1);
  }
  return r;
}

// acc[i] = fmaf(float(raw[i]), s, acc[i]) for the 8 elements.
template <bool BF16>
__device__ __forceinline__ void fma8(const Raw8<BF16> &r, float s, float (&acc)[8]) {
  if constexpr (BF16) {
    const uint32_t w[4] = {r.q[0].x, r.q[0].y, r.q[0].z, r.q[0].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      acc[2 * i] = fmaf(__uint_as_float(w[i] << 16), s, acc[2 * i]);
      acc[2 * i + 1] = fmaf(__uint_as_float(w[i] & 0xffff0000u), s, acc[2 * i + 1]);
    }
  } else {
    const uint32_t w[8] = {r.q[0].x, r.q[0].y, r.q[0].z, r.q[0].w, r.q[1].x, r.q[1].y, r.q[1].z, r.q[1].w};
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = fmaf(__uint_as_float(w[i]), s, acc[i]);
  }
}

// OUT: 0 fp32, 1 bf16, 2 fp8 e4m3 (saturating, round to nearest even).
template <int OUT>
__device__ __forceinline__ void store8(void *y, int64_t off, const float (&v)[8]) {
  if constexpr (OUT == 0) {
    float4 *p = reinterpret_cast<float4 *>(static_cast<float *>(y) + off);
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else if constexpr (OUT == 1) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * i]));
      const uint32_t hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * i + 1]));
      w[i] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4 *>(static_cast<__nv_bfloat16 *>(y) + off) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    uint32_t w[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; ++i)
      w[i / 4] |= static_cast<uint32_t>(__nv_cvt_float_to_fp8(v[i], __NV_SATFINITE, __NV_E4M3)) << (8 * (i % 4));
    *reinterpret_cast<uint2 *>(static_cast<uint8_t *>(y) + off) = make_uint2(w[0], w[1]);
  }
}

// reduce_fused, one block per token. Warp 0 first compacts the token's valid slots (position >= 0) into shared
// memory in slot order, with their scales (weight, times x_sf). The rows are then read in passes over the
// thread's 8-element chunks, each pass issuing 8 loads of 16 bytes before the first fmaf, whatever the number of
// valid slots m: B slots of G chunks at once with G * B = 8 (bf16; fp32 chunks are two loads: G * B = 4), by
// m (block-uniform): (8, 1) for m <= 1, (2, 4) for m <= 4, (1, 8) above (fp32: (4, 1), (1, 4)); a pass of
// (4, 2) would need 32 more accumulator registers than the others. A token with one valid slot (most tokens of an
// expert-parallel rank: 1.1 of K = 6 on average at TileKernels' benchmark shapes) loads 8 chunks at once; one with m =
// 6 loads 6 slots of one chunk. Results are bit-for-bit those of the slot-order loop: acc = fmaf(x, s, acc) from 0 over
// the valid slots in slot order, then * sf, then the cast. (The earlier kernel kept only one chunk's valid slots in
// flight, about 1.2 loads per thread at those shapes: bound by latency, 1.19-1.24x TileKernels' time there.)
template <bool BF16>
constexpr int kLoadsPerPass = BF16 ? 8 : 4;  // chunk loads (16 bytes bf16, 32 bytes fp32) in flight per thread
constexpr int kReduceThreads = 128;

// Chunks c0 + u * stride (u < G) of the token's output, m >= 1 valid slots, in batches of B slots.
template <bool BF16, int OUT, int G, int B>
__device__ __forceinline__ void reduce_chunks(const ReduceArgs &a, int64_t t, int64_t c0, int64_t stride,
                                              int64_t chunks, const int *pos, const float *scale, int m, float gsf) {
  float acc[G][8];
#pragma unroll
  for (int u = 0; u < G; ++u)
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[u][i] = 0.0f;
  for (int j = 0; j < m; j += B) {
    Raw8<BF16> r[B][G];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int p = pos[j + b < m ? j + b : j];  // in the list; an unused slot loads nothing
#pragma unroll
      for (int u = 0; u < G; ++u)
        if (j + b < m && c0 + u * stride < chunks) r[b][u] = load8<BF16>(a.x, p * a.H + (c0 + u * stride) * 8);
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (j + b >= m) break;
      const float s = scale[j + b];
#pragma unroll
      for (int u = 0; u < G; ++u)
        if (c0 + u * stride < chunks) fma8<BF16>(r[b][u], s, acc[u]);
    }
  }
#pragma unroll
  for (int u = 0; u < G; ++u) {
    const int64_t c = c0 + u * stride;
    if (c >= chunks) break;
    if (a.sf) {
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[u][i] = acc[u][i] * gsf;
    }
    store8<OUT>(a.out, t * a.H + c * 8, acc[u]);
  }
}

// The same for m <= 1: all G chunks' loads first, then each chunk is fmaf(x, s, 0), scaled and stored.
template <bool BF16, int OUT, int G>
__device__ __forceinline__ void reduce_chunks_single(const ReduceArgs &a, int64_t t, int64_t c0, int64_t stride,
                                                     int64_t chunks, const int *pos, const float *scale, int m,
                                                     float gsf) {
  Raw8<BF16> r[G];
  const int p = m > 0 ? pos[0] : 0;
#pragma unroll
  for (int u = 0; u < G; ++u)
    if (m > 0 && c0 + u * stride < chunks) r[u] = load8<BF16>(a.x, p * a.H + (c0 + u * stride) * 8);
  const float s = m > 0 ? scale[0] : 0.0f;
#pragma unroll
  for (int u = 0; u < G; ++u) {
    const int64_t c = c0 + u * stride;
    if (c >= chunks) break;
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
    if (m > 0) fma8<BF16>(r[u], s, acc);
    if (a.sf) {
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = acc[i] * gsf;
    }
    store8<OUT>(a.out, t * a.H + c * 8, acc);
  }
}

template <bool BF16, int OUT>
__global__ void __launch_bounds__(kReduceThreads, 7) reduce_kernel(const ReduceArgs a, DeviceError *err) {
  extern __shared__ char smem[];
  int *pos = reinterpret_cast<int *>(smem);
  float *scale = reinterpret_cast<float *>(smem + a.K * sizeof(int));
  __shared__ int valid_slots;
  const int64_t t = blockIdx.x;
  if (threadIdx.x < 32) {  // blockDim.x >= 32: H % 256 == 0
    const int lane = static_cast<int>(threadIdx.x);
    int m = 0;
    for (int64_t k0 = 0; k0 < a.K; k0 += 32) {
      const int64_t k = k0 + lane;
      int64_t p = -1;
      float s = 1.0f;
      if (k < a.K) {
        p = __ldg(a.pos + t * a.K + k);
        if (a.w) s = __ldg(a.w + t * a.K + k);  // issued with the position's load
        if (p < -1 || p >= a.P) {
          record_value_error(err, kErrPosRange, p, t * a.K + k, a.P);
          p = -1;
        }
        if (p >= 0 && a.x_sf) s = s * __ldg(a.x_sf + p);
      }
      const unsigned valid = __ballot_sync(kFullMask, p >= 0);
      if (p >= 0) {
        const int at = m + __popc(valid & ((1u << lane) - 1u));
        pos[at] = static_cast<int>(p);
        scale[at] = s;
      }
      m += __popc(valid);
    }
    if (lane == 0) valid_slots = m;
  }
  __syncthreads();
  const int m = valid_slots;
  const float gsf = a.sf ? __ldg(a.sf) : 1.0f;
  const int64_t chunks = a.H / 8;
  const int64_t stride = blockDim.x;
  constexpr int L = kLoadsPerPass<BF16>;
  if (m <= 1) {
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += stride * L)
      reduce_chunks_single<BF16, OUT, L>(a, t, c0, stride, chunks, pos, scale, m, gsf);
  } else if (!BF16 || m <= 4) {
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += stride * (L / 4))
      reduce_chunks<BF16, OUT, L / 4, 4>(a, t, c0, stride, chunks, pos, scale, m, gsf);
  } else if constexpr (BF16) {
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += stride)
      reduce_chunks<BF16, OUT, 1, 8>(a, t, c0, stride, chunks, pos, scale, m, gsf);
  }
}

template <bool BF16>
void launch_reduce_in(const ReduceArgs &a, const LaunchCtx &c, size_t smem) {
  const unsigned grid = static_cast<unsigned>(a.T);
  const int threads = a.H / 8 >= kReduceThreads ? kReduceThreads : static_cast<int>(a.H / 8);  // H % 256 == 0
  switch (a.out_dtype) {
    case TSHMEM_MOE_FLOAT32: reduce_kernel<BF16, 0><<<grid, threads, smem, c.stream>>>(a, c.err); break;
    case TSHMEM_MOE_BFLOAT16: reduce_kernel<BF16, 1><<<grid, threads, smem, c.stream>>>(a, c.err); break;
    default: reduce_kernel<BF16, 2><<<grid, threads, smem, c.stream>>>(a, c.err); break;
  }
}

}  // namespace

Status launch_reduce_fused(const ReduceArgs &a, const LaunchCtx &c) {
  const size_t smem = static_cast<size_t>(a.K) * (sizeof(int) + sizeof(float));
  if (smem > 48 * 1024)
    return fail(TSHMEM_MOE_ERR_UNSUPPORTED, "num_topk = %lld is too large for reduce_fused's slot table",
                static_cast<long long>(a.K));
  // H % 256 == 0 and library/aligned allocations give 16-byte aligned rows; check the bases anyway.
  if ((reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.out)) % 16 != 0)
    return fail(TSHMEM_MOE_ERR_UNSUPPORTED, "reduce_fused needs 16-byte aligned x and out base pointers");
  if (a.x_bf16)
    launch_reduce_in<true>(a, c, smem);
  else
    launch_reduce_in<false>(a, c, smem);
  return kSuccess;
}

}  // namespace tshmem_moe
