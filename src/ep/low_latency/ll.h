// Low-latency mode (docs/ep.md, "Low-latency mode"): the layout of its two slots in the buffer's num_rdma_bytes,
// the argument rules, and the parameters of its kernels. Host and device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/checks.h"
#include "core/device_error.h"
#include "tshmem/ep.h"

namespace tshmem_ep {

/// One slot of the low-latency region, offsets from the slot's start. Each slot holds
///   [signals: dispatch counts [L][N] u64, combine flags [E] u64]  (pad 256)
///   [send: max(M dispatch messages, L * N * M combine rows)]      (pad 256)
///   [receive: max(L * N * M dispatch messages, E * M combine rows)] (pad 256)
/// A dispatch message is a 16-byte header (the token index on its source), then the row (bf16, or fp8 and its fp32
/// scales padded to 16 bytes). A combine row is hidden bf16.
struct LlLayout {
  int64_t n_pes = 0, local_experts = 0, num_experts = 0, max_tokens = 0, hidden = 0;
  size_t dispatch_msg_bf16 = 0;  // the largest message (bf16 rows)
  size_t combine_row = 0;
  size_t count_off = 0, flag_off = 0, signal_bytes = 0;
  size_t send_off = 0, recv_off = 0;
  size_t slot_bytes = 0;
  size_t total_bytes = 0;  // both slots
};

/// Bytes of a dispatch message for this row format.
inline size_t ll_msg_bytes(int64_t hidden, bool fp8) {
  const size_t row = fp8 ? static_cast<size_t>(hidden) + ((static_cast<size_t>(hidden) / 128 * 4 + 15) & ~size_t{15})
                         : static_cast<size_t>(hidden) * 2;
  return 16 + row;
}

/// The layout of the region for these shapes (the caller checks the shapes first).
LlLayout ll_layout(int n_pes, int64_t max_tokens, int64_t hidden, int64_t num_experts);

/// The rules of the low-latency calls: messages "<call>: <argument> = <value>; <rule>". `phases` as given to the
/// call; nothing here touches the device.
Status check_ll_shape(const Geometry &g, int64_t max_tokens, int64_t hidden, int64_t num_experts);
Status check_ll_dispatch_args(const Geometry &g, const tshmem_ep_ll_dispatch_args_t *a, int phases);
Status check_ll_combine_args(const Geometry &g, const tshmem_ep_ll_combine_args_t *a, int phases);
/// The region against the buffer's num_rdma_bytes.
Status check_ll_fits(const Geometry &g, const LlLayout &l);

/// What the dispatch kernels need.
struct LlDispatchParams {
  const uint16_t *x;  // bf16 bits
  const int64_t *topk_idx;
  int num_tokens, num_topk, hidden, max_tokens, num_experts, local_experts, n_pes, my_pe;
  bool fp8, round_scale, ue8m0;
  size_t msg_bytes;
  char *send;            // this slot's send area (mine)
  char *recv;            // this slot's receive area (symmetric address)
  uint64_t *counts;      // this slot's dispatch counts [L][N] (symmetric address)
  uint64_t *next_clean;  // the other slot's combine flags [E] (mine), zeroed before any count is sent
  int next_clean_words;
  int *mask;          // [N], device
  unsigned *counter;  // grid completion counter
  DeviceError *err;
  uint64_t timeout_ms;
  // outputs
  void *recv_x;
  void *recv_scales;
  int32_t *recv_count, *recv_src_info;
  int64_t *recv_layout_range;
  int32_t *cum_stats;
  int64_t *wait_stats;
};

struct LlCombineParams {
  const uint16_t *x;  // [L][N*M][hidden] or the send area (zero copy)
  const int64_t *topk_idx;
  const float *topk_weights;
  const int32_t *src_info;
  const int64_t *layout_range;
  int num_tokens, num_topk, hidden, max_tokens, num_experts, local_experts, n_pes, my_pe;
  bool zero_copy;
  char *send;            // this slot's send area (combine rows [L][N*M][hidden])
  char *recv;            // this slot's receive area: combine rows [E][M][hidden] (symmetric address)
  uint64_t *flags;       // this slot's combine flags [E] (symmetric address)
  uint64_t *next_clean;  // the other slot's dispatch counts [L][N] (mine)
  int next_clean_words;
  int *mask;
  DeviceError *err;
  uint64_t timeout_ms;
  uint16_t *combined_x;
  int64_t *wait_stats;
};

/// What the clean kernel needs: the signal words of both slots to zero, and the barrier that skips masked PEs.
struct LlCleanParams {
  uint64_t *zero[2];  // each slot's signals (mine)
  size_t zero_words;
  uint64_t *arrive;  // [N] symmetric: the latest barrier count each PE sent here
  uint64_t *count;   // [N] mine: the barriers passed with each PE
  int *mask;
  DeviceError *err;
  uint64_t timeout_ms;
  int n_pes, my_pe;
};

/// The phases (TSHMEM_EP_LL_SEND, _RECV or both) of one call as one launch of the kernel named `dispatch` or
/// `combine`, as DeepEP's are (profilers match kernels by these names): both phases in one launch take at most
/// `resident` blocks, so that every block that waits shares the GPU with the blocks that send.
cudaError_t launch_ll_dispatch(const LlDispatchParams &p, int phases, int blocks, int resident, cudaStream_t stream);
cudaError_t launch_ll_combine(const LlCombineParams &p, int phases, int blocks, int resident, cudaStream_t stream);
/// A barrier with every PE this PE does not mask, the signals zeroed, the same barrier again.
cudaError_t launch_ll_clean(const LlCleanParams &p, cudaStream_t stream);
cudaError_t launch_ll_update_mask(int *mask, int pe, int value, int n_pes, cudaStream_t stream);

}  // namespace tshmem_ep
