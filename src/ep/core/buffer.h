// The buffer and the handle as the host keeps them. The buffer owns one symmetric allocation (tshmem_malloc),
// laid out as
//   [dispatch signals: n_pes x u64][combine signals: n_pes x u64]
//   [low-latency barrier arrivals: n_pes x u64][its counts: n_pes x u64] (pad to 256)
//   [publish row: publish_words(n_pes, TSHMEM_EP_MAX_EXPERTS) x i32] (pad to 256)
//   [published matrix: n_pes rows of the same]                        (pad to 256)
//   [receive area: num_nvl_bytes][staging area: num_rdma_bytes] (also the low-latency mode's two slots)
// and, in ordinary device memory, its error record and the two block counters of the data kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/checks.h"
#include "core/device_error.h"
#include "core/status.h"

struct tshmem_ep_buffer {
  tshmem_ep::Geometry geo;
  int num_nodes = 1;
  int device = -1;
  int sm_count = 1;
  int num_blocks = 0;            // 0: default
  uint64_t timeout_ms = 300000;  // bound of the signal waits (tshmem_ep_buffer_set_timeout_ms)
  char *sym = nullptr;           // the symmetric allocation
  uint64_t *dispatch_sig = nullptr;
  uint64_t *combine_sig = nullptr;
  int32_t *publish_row = nullptr;
  int32_t *matrix = nullptr;
  char *recv_area = nullptr;
  char *staging = nullptr;
  tshmem_ep::DeviceError *err = nullptr;  // device
  unsigned *counters = nullptr;           // device: [0] dispatch, [1] combine
  // Low-latency mode (low_latency/ll.h): its two slots live in the staging area (num_rdma_bytes).
  int ll_slot = 0;                 // the slot the next low-latency call with a send phase uses
  int *ll_mask = nullptr;          // device [n_pes]: 1 = masked (neither sent to nor waited for)
  unsigned *ll_counter = nullptr;  // device: the dispatch send kernel's block completion counter
  // The barrier of tshmem_ep_low_latency_clean, which skips masked PEs (symmetric, in the control part):
  // ll_arrive[q] is the latest barrier count PE q sent here; ll_count[q] the barriers this PE has passed with q.
  uint64_t *ll_arrive = nullptr;
  uint64_t *ll_count = nullptr;
};

struct tshmem_ep_handle {
  tshmem_ep_buffer *buffer = nullptr;
  int64_t max_tokens = 0;
  int64_t num_experts = 0;
  int64_t local_experts = 0;
  // Device: the published matrix copied at notify [n_pes x publish_words], the send map [max_tokens x n_pes]
  // (position of token t among the rows for PE p, or -1), the info words (core/rows.h, InfoLayout).
  int32_t *d_matrix = nullptr;
  int32_t *d_send_index = nullptr;
  int32_t *d_info = nullptr;
  // Pinned host mirrors, written by the synchronising notify.
  int32_t *h_matrix = nullptr;
  int32_t *h_info = nullptr;
  int64_t num_tokens = -1;       // of the last notify
  int64_t num_recv = -1;         // host value after a synchronising notify, else -1
  int64_t num_worst_tokens = 0;  // of the last notify
  bool needs_barrier = true;     // false right after a notify (its all-gather synchronised the PEs)
};

namespace tshmem_ep {

/// Bytes of the symmetric control part (signals, publish row, matrix) for n_pes.
size_t control_bytes(int n_pes);
/// Data kernel blocks in use.
int data_blocks(const tshmem_ep_buffer &b);
/// A NULL buffer or handle is INVALID_ARGUMENT naming the argument.
Status check_buffer(const tshmem_ep_buffer *b);
Status check_handle(const tshmem_ep_buffer *b, const tshmem_ep_handle *h);
/// Makes the buffer's device current for the call's scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

 private:
  int prev_ = -1;
};
/// A tshmem status as TSHMEM_EP_ERR_TSHMEM with tshmem's message.
Status tshmem_fail(int rc, const char *what);
/// After a synchronising notify: the most rows any PE receives, sends (= gets back in combine) and owns.
void handle_totals(const tshmem_ep_handle &h, int64_t *max_recv, int64_t *max_send, int64_t *max_tokens);
/// Waits for `stream`, reads the buffer's device error record and, with `clear`, clears it (on `stream`).
/// `only`: a DeviceErrorKind to report (others are left alone), or kNoError for any.
Status take_device_error(tshmem_ep_buffer *b, cudaStream_t stream, bool clear = true, int only = kNoError);
/// Loads every kernel of the library (core/kernels.h). Under CUDA's lazy loading a kernel is otherwise loaded at
/// its first launch, and a load while another kernel of the process waits for the off-node proxy holds the
/// proxy's copies behind that kernel: neither ends (docs/ep.md, "Kernels are loaded when the buffer is made").
Status load_kernels();
/// Ends a call whose kernels reach PEs of other nodes: waits for `stream` (outside graph capture). A CUDA call
/// that waits for a kernel while holding the driver's lock (a copy to pageable host memory: `.cpu()`, `.item()`,
/// `cudaMemcpy`) would hold the proxy's copies, which that kernel waits for, until the proxy's bound ends both
/// (docs/ep.md, "Across nodes the calls return when their kernels are done"). A stream wait holds no such lock.
Status finish_off_node(const tshmem_ep_buffer *b, cudaStream_t stream);

}  // namespace tshmem_ep
