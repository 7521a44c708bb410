// The kernels of notify and dispatch, and what they are given. Host code sees only these launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/device_error.h"
#include "core/rows.h"

namespace tshmem_ep {

/// Notify, first kernel: per destination PE p, the position of each token among the tokens bound for p (the send
/// map, -1 where is_token_in_rank is false) and their count, into the publish row with the per-expert counts,
/// the value-error flag and the token count.
cudaError_t launch_count(const bool *in_rank, int64_t num_tokens, int n_pes, const int32_t *per_expert,
                         int64_t num_experts, const DeviceError *err, int32_t *publish_row, int32_t *send_index,
                         cudaStream_t stream);

/// Notify, last kernel: from the all-gathered matrix (symmetric, overwritten by the next notify), the handle's
/// copy of it and its info words (core/rows.h, InfoLayout).
cudaError_t launch_prefix(const int32_t *matrix, int n_pes, int my_pe, int64_t num_experts, int64_t expert_alignment,
                          int64_t num_worst_tokens, int32_t *handle_matrix, int32_t *info, DeviceError *err,
                          cudaStream_t stream);

/// What the data kernels of dispatch read.
struct DispatchParams {
  const char *x;
  const float *scales;
  const int64_t *topk_idx;
  const float *topk_weights;
  int64_t num_tokens;
  int n_pes;
  int my_pe;
  int64_t local_experts;
  DispatchRow row;
  const int32_t *send_index;   // [num_tokens, n_pes]
  const int32_t *send_counts;  // [n_pes]: this PE's rows for each PE (its row of the published matrix)
  const int32_t *info;         // InfoLayout words
  InfoLayout il;
  char *recv_area;       // symmetric (this PE's address)
  int64_t area_rows;     // rows of row.stride that fit the receive area
  char *staging;         // symmetric, rows for PEs of other nodes (NULL on one node)
  int64_t staging_rows;  // rows of row.stride that fit it
  uint64_t *sig;         // symmetric dispatch signals [n_pes]
  unsigned *counter;     // the send kernel's block counter
  DeviceError *err;
  // Receive side
  char *recv_x;
  float *recv_scales;
  int64_t *recv_topk_idx;
  float *recv_topk_weights;
  int32_t *recv_src_idx;
  int64_t recv_capacity;
};

/// Sends every token row to each PE whose send-map entry is set (a peer pointer on this node, the proxy through
/// the staging area to other nodes), then the last block to finish signals every PE.
cudaError_t launch_dispatch_send(const DispatchParams &p, int blocks, cudaStream_t stream);
/// One block: waits for the signal of every PE in `sig` and clears them; after timeout_ms (0: tshmem's own bound,
/// TSHMEM_WAIT_TIMEOUT_MS) it prints which PE did not signal in which step (0 dispatch, 1 combine) and traps.
cudaError_t launch_wait_signals(uint64_t *sig, int n_pes, int my_pe, uint64_t timeout_ms, int step,
                                cudaStream_t stream);
/// Copies the received rows into the outputs (ids to local numbering, weights masked).
cudaError_t launch_dispatch_recv(const DispatchParams &p, int blocks, cudaStream_t stream);

}  // namespace tshmem_ep
