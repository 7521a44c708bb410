// The kernels of the notify step (dispatch/dispatch.h): the send map and the publish row before the all-gather,
// the prefix offsets after it. Neither touches a peer: the all-gather between them (tshmemx_allgather_on_stream)
// is the only communication, so these units need no device API.
#include "core/kernels.h"
#include "core/routes.h"
#include "dispatch/dispatch.h"
#include "tshmem/ep.h"

namespace tshmem_ep {
namespace {

constexpr int kCountThreads = 256;
constexpr int kPrefixThreads = 512;

// Block p < n_pes: an ordered scan of column p of is_token_in_rank. Block n_pes: the rest of the publish row.
__global__ void count_kernel(const bool *__restrict__ in_rank, int64_t num_tokens, int n_pes,
                             const int32_t *__restrict__ per_expert, int64_t num_experts, const DeviceError *err,
                             int32_t *publish_row, int32_t *send_index) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (blockIdx.x == static_cast<unsigned>(n_pes)) {
    for (int64_t e = tid; e < num_experts; e += blockDim.x) publish_row[n_pes + e] = per_expert[e];
    if (tid == 0) {
      publish_row[publish_error_word(n_pes, num_experts)] = err->kind == kBadExpert ? 1 : 0;
      publish_row[publish_tokens_word(n_pes, num_experts)] = static_cast<int32_t>(num_tokens);
      publish_row[publish_tokens_word(n_pes, num_experts) + 1] = 0;
      publish_row[publish_tokens_word(n_pes, num_experts) + 2] = 0;
    }
    return;
  }
  const int p = blockIdx.x;
  __shared__ int warp_total[kCountThreads / 32];
  __shared__ int running;
  if (tid == 0) running = 0;
  __syncthreads();
  for (int64_t base = 0; base < num_tokens; base += kCountThreads) {
    const int64_t t = base + tid;
    const bool f = t < num_tokens && in_rank[t * n_pes + p];
    const unsigned m = __ballot_sync(0xffffffffu, f);
    if (lane == 0) warp_total[warp] = __popc(m);
    __syncthreads();
    int off = running;
    for (int i = 0; i < warp; ++i) off += warp_total[i];
    if (t < num_tokens) send_index[t * n_pes + p] = f ? off + __popc(m & ((1u << lane) - 1u)) : -1;
    __syncthreads();
    if (tid == 0)
      for (int i = 0; i < kCountThreads / 32; ++i) running += warp_total[i];
    __syncthreads();
  }
  if (tid == 0) publish_row[p] = running;
}

__global__ void prefix_kernel(const int32_t *__restrict__ matrix, int n_pes, int my_pe, int64_t num_experts,
                              int64_t expert_alignment, int64_t num_worst_tokens, int32_t *handle_matrix, int32_t *info,
                              DeviceError *err) {
  const int tid = threadIdx.x;
  const int64_t w = publish_words(n_pes, num_experts);
  const int64_t local = num_experts / n_pes;
  const InfoLayout il = info_layout(n_pes, local);
  for (int64_t i = tid; i < n_pes * w; i += blockDim.x) handle_matrix[i] = matrix[i];
  for (int i = tid; i < n_pes; i += blockDim.x) {
    info[il.dst_offset + i] = route_dst_offset(matrix, w, my_pe, i);
    info[il.comb_dst_offset + i] = route_comb_dst_offset(matrix, w, my_pe, i);
  }
  for (int64_t l = tid; l < local; l += blockDim.x)
    info[1 + l] = route_local_expert_count(matrix, w, n_pes, my_pe, local, l, expert_alignment);
  if (tid == 0) {
    route_prefixes(matrix, w, n_pes, my_pe, num_experts, num_worst_tokens, il, info);
    if (info[il.status + 1]) record_error(err, kRecvOverflow, info[0], num_worst_tokens);
  }
}

}  // namespace

cudaError_t launch_count(const bool *in_rank, int64_t num_tokens, int n_pes, const int32_t *per_expert,
                         int64_t num_experts, const DeviceError *err, int32_t *publish_row, int32_t *send_index,
                         cudaStream_t stream) {
  count_kernel<<<n_pes + 1, kCountThreads, 0, stream>>>(in_rank, num_tokens, n_pes, per_expert, num_experts, err,
                                                        publish_row, send_index);
  return cudaGetLastError();
}

cudaError_t launch_prefix(const int32_t *matrix, int n_pes, int my_pe, int64_t num_experts, int64_t expert_alignment,
                          int64_t num_worst_tokens, int32_t *handle_matrix, int32_t *info, DeviceError *err,
                          cudaStream_t stream) {
  prefix_kernel<<<1, kPrefixThreads, 0, stream>>>(matrix, n_pes, my_pe, num_experts, expert_alignment, num_worst_tokens,
                                                  handle_matrix, info, err);
  return cudaGetLastError();
}

KernelSet notify_kernels() {
  static const KernelRef kKernels[] = {
      {reinterpret_cast<const void *>(&count_kernel), "count_kernel"},
      {reinterpret_cast<const void *>(&prefix_kernel), "prefix_kernel"},
  };
  return {kKernels, sizeof kKernels / sizeof kKernels[0]};
}

}  // namespace tshmem_ep
