// expand_to_fused(_with_sf) and reduce_fused (spec §14-§16): streaming kernels with 16-byte accesses.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "kernels_common.cuh"

namespace tshmem_moe {
namespace {

constexpr int kExpandThreads = 128;
constexpr int kMaxSlots = 32;  // destinations held in shared memory per pass (more are done in passes)

// Block b zeroes fused row b if it is padding, and (b < T) copies x[b] to each of its fused rows.
// V is the access width (uint4 when rows and bases allow, else narrower).
template <class V>
__global__ void __launch_bounds__(kExpandThreads) expand_kernel(const ExpandArgs a, DeviceError *err) {
  __shared__ int64_t dst[kMaxSlots];
  __shared__ int ndst;
  const int64_t b = blockIdx.x;
  const int64_t row_bytes = a.H * a.esize;
  const int64_t nv = row_bytes / static_cast<int64_t>(sizeof(V));
  if (b < a.P && __ldg(a.pos_to_expert + b) < 0) {
    V *o = reinterpret_cast<V *>(static_cast<char *>(a.out) + b * row_bytes);
    V z;
    memset(&z, 0, sizeof z);
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) o[i] = z;
    if (a.sf_out)
      for (int64_t j = threadIdx.x; j < a.hsf; j += blockDim.x)
        a.sf_out[a.col_major ? j * a.P4 + b : b * a.hsf + j] = 0u;
  }
  if (b >= a.T) return;
  const V *src = reinterpret_cast<const V *>(static_cast<const char *>(a.x) + b * row_bytes);
  for (int64_t k0 = 0; k0 < a.K; k0 += kMaxSlots) {
    __syncthreads();
    if (threadIdx.x == 0) {
      int m = 0;
      for (int64_t k = k0; k < a.K && k < k0 + kMaxSlots; ++k) {
        const int64_t q = __ldg(a.pos + b * a.K + k);
        if (q >= 0 && q < a.P)
          dst[m++] = q;
        else if (q != -1)
          record_value_error(err, kErrPosRange, q, b * a.K + k, a.P);
      }
      ndst = m;
    }
    __syncthreads();
    const int m = ndst;
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      const V v = src[i];
      for (int d = 0; d < m; ++d) reinterpret_cast<V *>(static_cast<char *>(a.out) + dst[d] * row_bytes)[i] = v;
    }
    if (a.sf_out)
      for (int64_t j = threadIdx.x; j < a.hsf; j += blockDim.x) {
        const uint32_t s = __ldg(a.x_sf + b * a.hsf + j);
        for (int d = 0; d < m; ++d) a.sf_out[a.col_major ? j * a.P4 + dst[d] : dst[d] * a.hsf + j] = s;
      }
  }
}

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

// Rows of one chunk in flight at once: every load of a batch is issued before the first fmaf, so a thread
// keeps up to 8 (bf16) or 4 (fp32, twice the bytes) 16-byte loads outstanding instead of 2. The fmaf order is
// still slot order, so the result is unchanged bit for bit.
template <bool BF16>
constexpr int kReduceBatch = BF16 ? 8 : 4;

// One block per token; each thread owns 8-element chunks and accumulates over the slots in slot order with
// fmaf (bit-exact with the reference), then scales by sf and casts.
template <bool BF16, int OUT>
__global__ void __launch_bounds__(128) reduce_kernel(const ReduceArgs a, DeviceError *err) {
  extern __shared__ char smem[];
  int *pos = reinterpret_cast<int *>(smem);
  float *scale = reinterpret_cast<float *>(smem + a.K * sizeof(int));
  const int64_t t = blockIdx.x;
  for (int64_t k = threadIdx.x; k < a.K; k += blockDim.x) {
    int64_t p = __ldg(a.pos + t * a.K + k);
    if (p < -1 || p >= a.P) {
      record_value_error(err, kErrPosRange, p, t * a.K + k, a.P);
      p = -1;
    }
    float s = a.w ? __ldg(a.w + t * a.K + k) : 1.0f;
    if (p >= 0 && a.x_sf) s = s * __ldg(a.x_sf + p);
    pos[k] = static_cast<int>(p);
    scale[k] = s;
  }
  __syncthreads();
  const float gsf = a.sf ? __ldg(a.sf) : 1.0f;
  const int64_t chunks = a.H / 8;
  const int K = static_cast<int>(a.K);
  constexpr int B = kReduceBatch<BF16>;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += B) {
      Raw8<BF16> r[B];
#pragma unroll
      for (int j = 0; j < B; ++j) {
        const int p = k0 + j < K ? pos[k0 + j] : -1;
        if (p >= 0) r[j] = load8<BF16>(a.x, p * a.H + c * 8);
      }
#pragma unroll
      for (int j = 0; j < B; ++j) {
        if (k0 + j < K && pos[k0 + j] >= 0) fma8<BF16>(r[j], scale[k0 + j], acc);
      }
    }
    if (a.sf) {
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = acc[i] * gsf;
    }
    store8<OUT>(a.out, t * a.H + c * 8, acc);
  }
}

template <class V>
void launch_expand_v(const ExpandArgs &a, const LaunchCtx &c) {
  const unsigned grid = static_cast<unsigned>(a.T > a.P ? a.T : a.P);
  expand_kernel<V><<<grid, kExpandThreads, 0, c.stream>>>(a, c.err);
}

template <bool BF16>
void launch_reduce_in(const ReduceArgs &a, const LaunchCtx &c, size_t smem) {
  const unsigned grid = static_cast<unsigned>(a.T);
  const int threads = a.H / 8 >= 128 ? 128 : static_cast<int>(a.H / 8);
  switch (a.out_dtype) {
    case TSHMEM_MOE_FLOAT32: reduce_kernel<BF16, 0><<<grid, threads, smem, c.stream>>>(a, c.err); break;
    case TSHMEM_MOE_BFLOAT16: reduce_kernel<BF16, 1><<<grid, threads, smem, c.stream>>>(a, c.err); break;
    default: reduce_kernel<BF16, 2><<<grid, threads, smem, c.stream>>>(a, c.err); break;
  }
}

}  // namespace

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
