// The dispatch layout on the GPU: one thread per token reads its top-k row once and adds to the per-expert,
// per-PE and per-node counts (integer atomics: the totals do not depend on the order) and marks
// is_token_in_rank. An entry outside [-1, num_experts) counts as -1 and is recorded (the first one wins).
#include "core/kernels.h"
#include "layout/layout.h"

namespace tshmem_ep {
namespace {

constexpr int kThreads = 256;

__global__ void layout_kernel(const int64_t *__restrict__ topk_idx, int64_t num_tokens, int num_topk,
                              int64_t num_experts, int n_pes, int pes_per_node, int32_t *per_rank, int32_t *per_node,
                              int32_t *per_expert, bool *in_rank, DeviceError *err) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= num_tokens) return;
  const int64_t local = num_experts / n_pes;
  int pes[TSHMEM_EP_MAX_TOPK];
  int npes = 0;
  for (int k = 0; k < num_topk; ++k) {
    const int64_t e = topk_idx[t * num_topk + k];
    if (e < -1 || e >= num_experts) {
      record_error(err, kBadExpert, static_cast<long long>(e), static_cast<long long>(t * num_topk + k));
      continue;
    }
    if (e < 0) continue;
    atomicAdd(per_expert + e, 1);
    const int pe = static_cast<int>(e / local);
    bool seen = false;
    for (int i = 0; i < npes; ++i) seen |= pes[i] == pe;
    if (seen) continue;
    // A node is new for this token when no earlier PE of the token is on it.
    bool node_seen = false;
    for (int i = 0; i < npes; ++i) node_seen |= pes[i] / pes_per_node == pe / pes_per_node;
    pes[npes++] = pe;
    in_rank[t * n_pes + pe] = true;
    atomicAdd(per_rank + pe, 1);
    if (per_node && !node_seen) atomicAdd(per_node + pe / pes_per_node, 1);
  }
}

}  // namespace

cudaError_t launch_layout(const int64_t *topk_idx, int64_t num_tokens, int num_topk, int64_t num_experts, int n_pes,
                          int pes_per_node, int32_t *per_rank, int32_t *per_node, int32_t *per_expert, bool *in_rank,
                          DeviceError *err, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(per_rank, 0, sizeof(int32_t) * static_cast<size_t>(n_pes), stream);
  if (e == cudaSuccess && per_node)
    e = cudaMemsetAsync(per_node, 0, sizeof(int32_t) * static_cast<size_t>(n_pes / pes_per_node), stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(per_expert, 0, sizeof(int32_t) * static_cast<size_t>(num_experts), stream);
  if (e == cudaSuccess && num_tokens > 0)
    e = cudaMemsetAsync(in_rank, 0, static_cast<size_t>(num_tokens) * static_cast<size_t>(n_pes), stream);
  if (e != cudaSuccess || num_tokens == 0) return e;
  const unsigned blocks = static_cast<unsigned>((num_tokens + kThreads - 1) / kThreads);
  layout_kernel<<<blocks, kThreads, 0, stream>>>(topk_idx, num_tokens, num_topk, num_experts, n_pes, pes_per_node,
                                                 per_rank, per_node, per_expert, in_rank, err);
  return cudaGetLastError();
}

KernelSet layout_kernels() {
  static const KernelRef kKernels[] = {
      {reinterpret_cast<const void *>(&layout_kernel), "layout_kernel"},
  };
  return {kKernels, sizeof kKernels / sizeof kKernels[0]};
}

}  // namespace tshmem_ep
