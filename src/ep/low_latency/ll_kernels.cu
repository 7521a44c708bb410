// The kernels of low-latency mode (low_latency/ll.h, docs/ep.md "Low-latency mode").
//   dispatch send: a warp per token packs its message once in this PE's send area (fp8 quantisation there), then
//     for each top-k entry writes it into the expert's PE at [local expert][my PE][slot]: 16-byte stores through
//     the peer pointer on this node, tshmem::putmem_nbi from the send area to another node. The slot is the
//     entry's rank among this PE's entries naming the same expert (token order, then top-k order): no atomics,
//     so the rows land in the same places every run. The last block completes every transfer (tshmem::quiet) and
//     sends each expert's count, count + 1, to its PE (tshmem::signal_op).
//   dispatch receive: a block per (local expert, source PE) waits for the counts of the sources up to its own
//     (bounded), so it knows where its rows start in the packed output, and copies them out.
//   combine send: a block per (local expert, destination PE) returns each received row to the slot
//     [global expert][token] of its token's PE, then sets that expert's flag there.
//   combine receive: every block waits for the flags of every expert of an unmasked PE; a warp per token sums
//     its top-k rows times their weights in fp32, in top-k order, and rounds once.
// Each call is one kernel, `dispatch` or `combine`, launched once with both phases or, with the receive hook, once
// per phase, as DeepEP's are (a profiler that matches kernels by name counts one per phase).
//   clean: a barrier with every PE not masked, the signals zeroed, the barrier again (DeepEP's
//     clean_low_latency_buffer): a masked PE is neither signalled nor waited for.
// A wait that passes the buffer's bound prints which PE it waited for, masks that PE and records the error: the
// call completes without it (DeepEP's behaviour with a mask buffer).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdio>

#include "core/kernels.h"
#include "core/kernels_common.cuh"
#include "low_latency/ll.h"

namespace tshmem_ep {
namespace {

constexpr float kFp8Margin = 1e-4f;  // DeepEP's: a group of zeros gets a finite scale
constexpr float kFp8Max = 448.0f;
constexpr float kFp8MaxInv = 1.0f / 448.0f;

__device__ __forceinline__ uint64_t ld_acquire_u64(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ int ld_volatile_int(const int *p) { return *reinterpret_cast<const volatile int *>(p); }

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

/// The call a wait belongs to (the `step` of DeviceError's kPeerTimeout).
__device__ const char *step_name(int step) {
  return step == 0   ? "tshmem_ep_low_latency_dispatch"
         : step == 1 ? "tshmem_ep_low_latency_combine"
                     : "tshmem_ep_low_latency_clean";
}

/// Waits until *sig >= target (returns it), or until `pe` is masked (returns 0), or past the bound: then prints,
/// masks `pe`, records the error and returns 0. The bound is the buffer's timeout, or with 0 tshmem's
/// (TSHMEM_WAIT_TIMEOUT_MS; 0 there too: none). `step` names the call (step_name). *cycles: GPU clock cycles waited.
__device__ uint64_t wait_at_least(const uint64_t *sig, uint64_t target, int pe, int *mask, uint64_t timeout_ms,
                                  DeviceError *err, int step, int my_pe, unsigned long long *cycles) {
  const long long c0 = clock64();
  const uint64_t t0 = now_ns();
  const uint64_t bound_ns = timeout_ms ? timeout_ms * 1000000ull : tshmem::wait_timeout_ns();
  uint64_t v = 0;
  for (;;) {
    v = ld_acquire_u64(sig);
    if (v >= target) break;
    v = 0;
    if (ld_volatile_int(mask + pe)) break;
    if (bound_ns && now_ns() - t0 > bound_ns) {
      if (atomicExch(mask + pe, 1) == 0)
        printf(
            "tshmem_ep: %s on PE %d: no signal from PE %d after %llu ms (it stopped, or did not make the same "
            "call); PE %d is masked now\n",
            step_name(step), my_pe, pe, static_cast<unsigned long long>(bound_ns / 1000000ull), pe);
      record_error(err, kPeerTimeout, pe, step);
      break;
    }
    __nanosleep(64);
  }
  *cycles = static_cast<unsigned long long>(clock64() - c0);
  return v;
}

/// A signal word of dispatch or combine: set (non-zero) by its sender.
__device__ uint64_t wait_signal(const uint64_t *sig, int pe, int *mask, uint64_t timeout_ms, DeviceError *err, int step,
                                int my_pe, unsigned long long *cycles) {
  return wait_at_least(sig, 1, pe, mask, timeout_ms, err, step, my_pe, cycles);
}

/// One warp quantises a row of `hidden` bf16 (hidden % 128 == 0) to fp8 e4m3 at `out` and its per-128-channel
/// scales (what multiplies the fp8 values back) at `scales`: DeepEP's arithmetic, amax clamped below at 1e-4.
__device__ void quantize_row(uint8_t *out, float *scales, const uint16_t *x, int hidden, bool round_scale, int lane) {
  const int chunks = hidden / 8;  // 8 channels (16 bytes of bf16) per lane per step; 16 lanes per scale group
  for (int c0 = 0; c0 < chunks; c0 += 32) {
    const int c = c0 + lane;
    float v[8];
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (c < chunks) raw = reinterpret_cast<const uint4 *>(x)[c];
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    float amax = kFp8Margin;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = bf16_bits_to_float(w[i] & 0xffffu);
      v[2 * i + 1] = bf16_bits_to_float(w[i] >> 16);
      amax = fmaxf(amax, fmaxf(fabsf(v[2 * i]), fabsf(v[2 * i + 1])));
    }
#pragma unroll
    for (int m = 8; m >= 1; m >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
    float scale, scale_inv;
    if (round_scale) {
      const uint32_t bits = __float_as_uint(amax * kFp8MaxInv);
      const int e = static_cast<int>((bits >> 23) & 0xffu) - 127 + ((bits & 0x7fffffu) != 0);  // ceil(log2)
      scale = __uint_as_float(static_cast<uint32_t>(-e + 127) << 23);
      scale_inv = __uint_as_float(static_cast<uint32_t>(e + 127) << 23);
    } else {
      scale_inv = amax * kFp8MaxInv;
      scale = kFp8Max / amax;
    }
    if (c < chunks) {
      uint32_t packed[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const __nv_fp8x2_storage_t lo =
            __nv_cvt_float2_to_fp8x2(make_float2(v[4 * i] * scale, v[4 * i + 1] * scale), __NV_SATFINITE, __NV_E4M3);
        const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(
            make_float2(v[4 * i + 2] * scale, v[4 * i + 3] * scale), __NV_SATFINITE, __NV_E4M3);
        packed[i] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
      }
      reinterpret_cast<uint2 *>(out)[c] = make_uint2(packed[0], packed[1]);
      if ((lane & 15) == 0) scales[c / 16] = scale_inv;
    }
  }
}

__device__ void dispatch_send(const LlDispatchParams &p) {
  __shared__ int expert_count[TSHMEM_EP_MAX_EXPERTS];
  __shared__ bool last_block;
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * kWarpsPerBlock;
  const int K = p.num_topk, L = p.local_experts, N = p.n_pes, M = p.max_tokens;
  const size_t x_bytes = p.fp8 ? static_cast<size_t>(p.hidden) : static_cast<size_t>(p.hidden) * 2;
  for (int t = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); t < p.num_tokens; t += warps) {
    char *msg = p.send + static_cast<size_t>(t) * p.msg_bytes;
    const uint16_t *row = p.x + static_cast<size_t>(t) * p.hidden;
    if (lane == 0) *reinterpret_cast<int4 *>(msg) = make_int4(t, 0, 0, 0);
    if (p.fp8)
      quantize_row(reinterpret_cast<uint8_t *>(msg + 16), reinterpret_cast<float *>(msg + 16 + x_bytes), row, p.hidden,
                   p.round_scale, lane);
    else
      warp_copy16(msg + 16, row, x_bytes, lane);
    // This lane's entry (lane < K) and its slot: the entries naming the same expert before it, in token order then
    // top-k order. Bad ids count as -1 and are recorded.
    int64_t e = -1;
    if (lane < K) {
      e = p.topk_idx[static_cast<int64_t>(t) * K + lane];
      if (e < -1 || e >= p.num_experts) {
        record_error(p.err, kBadExpert, e, static_cast<long long>(t) * K + lane);
        e = -1;
      }
    }
    int slot = 0;
    const int prefix = t * K;
    for (int i0 = 0; i0 < prefix; i0 += 32) {
      const int i = i0 + lane;
      const int64_t v = i < prefix ? p.topk_idx[i] : -2;
      for (int k = 0; k < K; ++k) {
        const int64_t ek = __shfl_sync(0xffffffffu, e, k);
        const unsigned hits = __ballot_sync(0xffffffffu, v == ek && ek >= 0);
        if (lane == k) slot += __popc(hits);
      }
    }
    for (int k = 0; k < K; ++k) {
      const int64_t ek = __shfl_sync(0xffffffffu, e, k);
      if (k < lane && ek == e) ++slot;
    }
    __syncwarp();  // the message is written (every lane's part) before any lane reads it
    bool fenced = false;
    for (int k = 0; k < K; ++k) {
      const int64_t ek = __shfl_sync(0xffffffffu, e, k);
      const int sk = __shfl_sync(0xffffffffu, slot, k);
      if (ek < 0) continue;
      const int dst = static_cast<int>(ek / L);
      // One read for the warp (its put is warp-wide): the receive phase of another block may mask a PE meanwhile.
      if (__shfl_sync(0xffffffffu, ld_volatile_int(p.mask + dst), 0)) continue;
      const int le = static_cast<int>(ek % L);
      char *dst_addr = p.recv + ((static_cast<size_t>(le) * N + p.my_pe) * M + sk) * p.msg_bytes;
      char *peer = static_cast<char *>(tshmem::ptr(dst_addr, dst));
      if (peer) {
        warp_copy16(peer, msg, p.msg_bytes, lane);
      } else {
        if (!fenced) {
          __threadfence_system();  // the proxy reads the message with a copy engine
          __syncwarp();
          fenced = true;
        }
        tshmem::putmem_nbi<tshmem::warp_scope>(dst_addr, msg, p.msg_bytes, dst);
      }
    }
  }
  // The last block to finish completes every block's transfers, then sends the counts.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    last_block = atomicAdd(p.counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  for (int i = threadIdx.x; i < p.num_experts; i += blockDim.x) expert_count[i] = 0;
  // The other slot's combine flags are zeroed before any count leaves: a PE writes them only in a combine that
  // follows its receipt of these counts.
  for (int i = threadIdx.x; i < p.next_clean_words; i += blockDim.x) p.next_clean[i] = 0;
  __syncthreads();
  const int entries = p.num_tokens * K;
  for (int i = threadIdx.x; i < entries; i += blockDim.x) {
    const int64_t v = p.topk_idx[i];
    if (v >= 0 && v < p.num_experts) atomicAdd(&expert_count[v], 1);
  }
  if (threadIdx.x == 0) {
    *p.counter = 0;
    __threadfence_system();
    tshmem::quiet();  // every block's puts (across nodes: complete at their targets)
  }
  __syncthreads();
  for (int ex = threadIdx.x; ex < p.num_experts; ex += blockDim.x) {
    const int dst = ex / L;
    if (ld_volatile_int(p.mask + dst)) continue;
    uint64_t *sig = p.counts + static_cast<size_t>(ex % L) * N + p.my_pe;
    tshmem::signal_op(sig, static_cast<uint64_t>(expert_count[ex]) + 1, TSHMEM_SIGNAL_SET, dst);
  }
}

__device__ void dispatch_recv(const LlDispatchParams &p) {
  __shared__ int s_begin, s_count;
  const int lane = threadIdx.x & 31;
  const int L = p.local_experts, N = p.n_pes, M = p.max_tokens;
  const size_t x_bytes = p.fp8 ? static_cast<size_t>(p.hidden) : static_cast<size_t>(p.hidden) * 2;
  const int S = p.hidden / 128;
  const size_t rows = static_cast<size_t>(N) * M;  // rows per local expert
  for (int q = blockIdx.x; q < L * N; q += gridDim.x) {
    const int le = q / N, src = q % N;
    if (threadIdx.x == 0) {
      s_begin = 0;
      s_count = 0;
    }
    __syncthreads();
    // Sources before mine give my rows' start; mine gives their count.
    for (int r = threadIdx.x; r <= src; r += blockDim.x) {
      unsigned long long cycles = 0;
      const uint64_t v =
          wait_signal(p.counts + static_cast<size_t>(le) * N + r, r, p.mask, p.timeout_ms, p.err, 0, p.my_pe, &cycles);
      const int c = v ? static_cast<int>(v - 1) : 0;
      if (r < src) atomicAdd(&s_begin, c);
      if (r == src) {
        s_count = c;
        if (p.wait_stats) atomicAdd(reinterpret_cast<unsigned long long *>(p.wait_stats + src), cycles);
      }
    }
    __syncthreads();
    const int begin = s_begin, count = s_count;
    if (threadIdx.x == 0) {
      p.recv_layout_range[static_cast<size_t>(le) * N + src] =
          static_cast<int64_t>(static_cast<uint32_t>(count)) | (static_cast<int64_t>(begin) << 32);
      if (p.cum_stats) atomicAdd(p.cum_stats + le, count);
      if (src == N - 1) p.recv_count[le] = begin + count;
    }
    const char *base = p.recv + (static_cast<size_t>(le) * N + src) * M * p.msg_bytes;
    for (int i = threadIdx.x >> 5; i < count; i += kWarpsPerBlock) {
      const char *msg = base + static_cast<size_t>(i) * p.msg_bytes;
      const size_t j = static_cast<size_t>(begin) + i;
      if (lane == 0) p.recv_src_info[static_cast<size_t>(le) * rows + j] = *reinterpret_cast<const int *>(msg);
      warp_copy16(static_cast<char *>(p.recv_x) + (static_cast<size_t>(le) * rows + j) * x_bytes, msg + 16, x_bytes,
                  lane);
      if (p.fp8) {
        const float *sc = reinterpret_cast<const float *>(msg + 16 + x_bytes);
        for (int s = lane; s < S; s += 32) {
          const float v = sc[s];
          if (p.ue8m0) {
            // int32 [L][S / 4][N * M] with byte s % 4 of each word: the exponent of the power-of-2 scale.
            uint8_t *b = static_cast<uint8_t *>(p.recv_scales) +
                         ((static_cast<size_t>(le) * (S / 4) + s / 4) * rows + j) * 4 + s % 4;
            *b = static_cast<uint8_t>(__float_as_uint(v) >> 23);
          } else {
            static_cast<float *>(p.recv_scales)[(static_cast<size_t>(le) * S + s) * rows + j] = v;
          }
        }
      }
    }
    __syncthreads();
  }
}

__device__ void combine_send(const LlCombineParams &p) {
  const int lane = threadIdx.x & 31;
  const int L = p.local_experts, N = p.n_pes, M = p.max_tokens;
  const size_t row_bytes = static_cast<size_t>(p.hidden) * 2;
  const size_t rows = static_cast<size_t>(N) * M;
  // The other slot's dispatch counts are zeroed before any of this block's flags leaves (every block does it: a
  // PE writes them only after it has every flag of this call).
  for (int i = threadIdx.x; i < p.next_clean_words; i += blockDim.x) p.next_clean[i] = 0;
  __syncthreads();
  for (int q = blockIdx.x; q < L * N; q += gridDim.x) {
    const int le = q / N, dst = q % N;
    // One answer for the block (it meets at a barrier below): the receive phase of another block may mask a PE
    // meanwhile.
    if (__syncthreads_or(ld_volatile_int(p.mask + dst))) continue;
    const int64_t range = p.layout_range[static_cast<size_t>(le) * N + dst];
    const int count = static_cast<int>(range & 0xffffffffll), begin = static_cast<int>(range >> 32);
    const int ex = p.my_pe * L + le;
    bool staged = false;
    for (int i = threadIdx.x >> 5; i < count; i += kWarpsPerBlock) {
      const size_t j = static_cast<size_t>(begin) + i;
      const int t = p.src_info[static_cast<size_t>(le) * rows + j];
      const char *src = reinterpret_cast<const char *>(p.x) + (static_cast<size_t>(le) * rows + j) * row_bytes;
      char *dst_addr = p.recv + (static_cast<size_t>(ex) * M + t) * row_bytes;
      char *peer = static_cast<char *>(tshmem::ptr(dst_addr, dst));
      if (peer) {
        warp_copy16(peer, src, row_bytes, lane);
      } else {
        char *stage = p.send + (static_cast<size_t>(le) * rows + j) * row_bytes;
        if (!p.zero_copy) warp_copy16(stage, src, row_bytes, lane);
        __threadfence_system();
        __syncwarp();
        tshmem::putmem_nbi<tshmem::warp_scope>(dst_addr, stage, row_bytes, dst);
        staged = true;
      }
    }
    staged = __syncthreads_or(staged);
    if (threadIdx.x == 0) {
      if (staged)
        tshmem::quiet();  // this PE's puts, this block's among them, complete at their targets
      else
        __threadfence_system();
      tshmem::signal_op(p.flags + ex, 1, TSHMEM_SIGNAL_SET, dst);
    }
  }
}

__device__ void combine_recv(const LlCombineParams &p) {
  const int lane = threadIdx.x & 31;
  const int L = p.local_experts, M = p.max_tokens, K = p.num_topk;
  for (int ex = threadIdx.x; ex < p.num_experts; ex += blockDim.x) {
    unsigned long long cycles = 0;
    wait_signal(p.flags + ex, ex / L, p.mask, p.timeout_ms, p.err, 1, p.my_pe, &cycles);
    if (blockIdx.x == 0 && p.wait_stats)
      atomicAdd(reinterpret_cast<unsigned long long *>(p.wait_stats + ex / L), cycles);
  }
  __syncthreads();
  const int chunks = p.hidden / 8;
  const int warps = gridDim.x * kWarpsPerBlock;
  for (int t = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); t < p.num_tokens; t += warps) {
    int64_t e = -1;
    float w = 0.0f;
    if (lane < K) {
      e = p.topk_idx[static_cast<int64_t>(t) * K + lane];
      w = p.topk_weights[static_cast<int64_t>(t) * K + lane];
      if (e < 0 || e >= p.num_experts || ld_volatile_int(p.mask + e / L)) e = -1;
    }
    for (int c0 = 0; c0 < chunks; c0 += 32) {
      const int c = c0 + lane;
      float acc[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) acc[u] = 0.0f;
      for (int k = 0; k < K; ++k) {
        const int64_t ek = __shfl_sync(0xffffffffu, e, k);
        const float wk = __shfl_sync(0xffffffffu, w, k);
        if (ek < 0 || c >= chunks) continue;
        const uint4 raw = reinterpret_cast<const uint4 *>(p.recv + (static_cast<size_t>(ek) * M + t) *
                                                                       static_cast<size_t>(p.hidden) * 2)[c];
        const uint32_t wd[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          acc[2 * u] = acc[2 * u] + bf16_bits_to_float(wd[u] & 0xffffu) * wk;
          acc[2 * u + 1] = acc[2 * u + 1] + bf16_bits_to_float(wd[u] >> 16) * wk;
        }
      }
      if (c >= chunks) continue;
      uint32_t out[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t lo = __bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * u]));
        const uint32_t hi = __bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * u + 1]));
        out[u] = lo | (hi << 16);
      }
      reinterpret_cast<uint4 *>(p.combined_x + static_cast<size_t>(t) * p.hidden)[c] =
          make_uint4(out[0], out[1], out[2], out[3]);
    }
  }
}

/// One barrier of the clean kernel (one block): every earlier transfer of this PE complete, then for each PE q not
/// masked, this PE's count with q goes up by one, is sent to q, and q's is awaited. A PE masked on both sides is
/// skipped by both, so the counts of every pair stay equal and a later barrier with it (unmasked again) matches.
__device__ void barrier_unmasked(const LlCleanParams &p) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    tshmem::quiet();
  }
  __syncthreads();
  for (int q = threadIdx.x; q < p.n_pes; q += blockDim.x) {
    if (q == p.my_pe || ld_volatile_int(p.mask + q)) continue;
    const uint64_t k = ++p.count[q];
    tshmem::signal_op(p.arrive + p.my_pe, k, TSHMEM_SIGNAL_SET, q);
    unsigned long long cycles = 0;
    wait_at_least(p.arrive + q, k, q, p.mask, p.timeout_ms, p.err, 2, p.my_pe, &cycles);
  }
  __syncthreads();
}

__global__ void ll_update_mask_kernel(int *mask, int pe, int value) { atomicExch(mask + pe, value); }

unsigned blocks_for(int64_t items, int per_block, int cap) {
  const int64_t need = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(need < 1 ? 1 : need < cap ? need : cap);
}

}  // namespace

// The kernels under the names a profiler shows (tshmem_ep::low_latency::dispatch, ...combine, ...clean).
namespace low_latency {

__global__ void __launch_bounds__(kDataThreads) dispatch(const __grid_constant__ LlDispatchParams p, int phases) {
  if (phases & TSHMEM_EP_LL_SEND) dispatch_send(p);
  __syncthreads();
  if (phases & TSHMEM_EP_LL_RECV) dispatch_recv(p);
}

__global__ void __launch_bounds__(kDataThreads) combine(const __grid_constant__ LlCombineParams p, int phases) {
  if (phases & TSHMEM_EP_LL_SEND) combine_send(p);
  __syncthreads();
  if (phases & TSHMEM_EP_LL_RECV) combine_recv(p);
}

__global__ void __launch_bounds__(kDataThreads) clean(const __grid_constant__ LlCleanParams p) {
  barrier_unmasked(p);
  for (int s = 0; s < 2; ++s)
    for (size_t i = threadIdx.x; i < p.zero_words; i += blockDim.x) p.zero[s][i] = 0;
  barrier_unmasked(p);  // begins with a system fence: the zeros are visible before any PE sends again
}

}  // namespace low_latency

namespace {

/// The grid of one launch: each phase's own, or with both the larger, capped at `resident` (the receiving blocks
/// wait for signals this PE's own sending blocks send).
unsigned grid_of(int phases, unsigned send_grid, unsigned recv_grid, int resident) {
  if (phases == TSHMEM_EP_LL_SEND) return send_grid;
  if (phases == TSHMEM_EP_LL_RECV) return recv_grid;
  const unsigned both = send_grid > recv_grid ? send_grid : recv_grid;
  return resident > 0 && both > static_cast<unsigned>(resident) ? static_cast<unsigned>(resident) : both;
}

}  // namespace

cudaError_t launch_ll_dispatch(const LlDispatchParams &p, int phases, int blocks, int resident, cudaStream_t stream) {
  const unsigned grid = grid_of(phases, blocks_for(p.num_tokens, kWarpsPerBlock, blocks),
                                blocks_for(static_cast<int64_t>(p.local_experts) * p.n_pes, 1, blocks), resident);
  low_latency::dispatch<<<grid, kDataThreads, 0, stream>>>(p, phases);
  return cudaGetLastError();
}

cudaError_t launch_ll_combine(const LlCombineParams &p, int phases, int blocks, int resident, cudaStream_t stream) {
  const unsigned grid = grid_of(phases, blocks_for(static_cast<int64_t>(p.local_experts) * p.n_pes, 1, blocks),
                                blocks_for(p.num_tokens, kWarpsPerBlock, blocks), resident);
  low_latency::combine<<<grid, kDataThreads, 0, stream>>>(p, phases);
  return cudaGetLastError();
}

cudaError_t launch_ll_clean(const LlCleanParams &p, cudaStream_t stream) {
  low_latency::clean<<<1, kDataThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_ll_update_mask(int *mask, int pe, int value, int n_pes, cudaStream_t stream) {
  (void)n_pes;
  ll_update_mask_kernel<<<1, 1, 0, stream>>>(mask, pe, value);
  return cudaGetLastError();
}

KernelSet low_latency_kernels() {
  static const KernelRef kKernels[] = {
      {reinterpret_cast<const void *>(&low_latency::dispatch), "tshmem_ep::low_latency::dispatch"},
      {reinterpret_cast<const void *>(&low_latency::combine), "tshmem_ep::low_latency::combine"},
      {reinterpret_cast<const void *>(&low_latency::clean), "tshmem_ep::low_latency::clean"},
      {reinterpret_cast<const void *>(&ll_update_mask_kernel), "ll_update_mask_kernel"},
  };
  return {kKernels, sizeof kKernels / sizeof kKernels[0]};
}

}  // namespace tshmem_ep
