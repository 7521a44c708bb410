/*
 * tshmem_ep — expert-parallel dispatch and combine over tshmem (docs/ep.md).
 *
 * The C API of libtshmem_ep: the normal-mode operations of an expert-parallel MoE layer, with the semantics of
 * DeepEP V1's `Buffer` (layout, dispatch, cached dispatch, combine), over tshmem's symmetric heap and device API.
 * Every PE is one process driving one GPU (tshmem_init must have run); experts are split evenly over the PEs:
 * PE p hosts the global experts [p * L, (p + 1) * L), L = num_experts / n_pes.
 *
 * The flow of one MoE layer (docs/ep.md, "The flow"):
 *   1. tshmem_ep_get_dispatch_layout: from topk_idx [T, K], how many tokens go to each PE, node and expert, and
 *      which PEs each token goes to (is_token_in_rank [T, n_pes]).
 *   2. tshmem_ep_notify: every PE learns how many tokens it receives from each PE (a collective on the stream);
 *      the result is kept in a handle. Without num_worst_tokens the host waits for the stream once and gets the
 *      number of received tokens and the per-expert counts (aligned up to expert_alignment), to size the outputs.
 *      With num_worst_tokens > 0 nothing waits: the counts stay on the device (tshmem_ep_handle_device_counts),
 *      and the outputs are sized to num_worst_tokens rows (CUDA-graph capturable).
 *   3. tshmem_ep_dispatch: the token rows (and optionally their top-k ids and weights) travel to every PE that
 *      hosts one of their experts. Calling it again with the same handle re-dispatches other data (activations)
 *      along the same routes without notifying again (DeepEP's cached handle).
 *   4. tshmem_ep_combine: the inverse; each PE's per-received-row outputs return to the row's home PE and are
 *      summed there in ascending PE order in fp32 (bit-identical from run to run).
 *
 * Order of received rows: by source PE, then by token index on the source PE. recv_topk_idx holds each top-k
 * entry in the receiver's LOCAL expert numbering (global id - my_pe * L), and -1 for an expert of another PE (or
 * an entry that was -1); recv_topk_weights is 0 where recv_topk_idx is -1.
 *
 * Collective calls: tshmem_ep_buffer_create / _destroy (host-blocking, like tshmem_malloc), and tshmem_ep_notify,
 * tshmem_ep_dispatch, tshmem_ep_combine (on-stream: every PE calls them in the same order with the same
 * num_experts, hidden, dtypes and buffer). Layout and handle creation are local.
 *
 * Errors: every call returns a status; tshmem_ep_last_error() describes the last failure on the calling thread
 * as "<call>: <argument> = <value>; <rule>". Arguments (null pointers, dtypes, hidden, alignment, sizes, what the
 * buffer can hold) are checked on the host before anything is launched, and then nothing is written. Values
 * inside device tensors (an expert id >= num_experts or < -1) are checked on the device: the entry is treated
 * as -1 (nothing is written out of bounds) and the violation recorded; tshmem_ep_get_dispatch_layout then waits
 * for its stream and returns TSHMEM_EP_ERR_INVALID_VALUE (except under CUDA-graph capture, where it cannot
 * wait: then the synchronising notify, or tshmem_ep_check_device_errors, reports it).
 *
 * Pointers: device memory of this PE's GPU unless marked "host". Tensors are contiguous, row-major. A pointer to
 * an array of zero elements may be NULL (what an empty tensor's data pointer is): num_tokens == 0 for x,
 * x_scales, topk_idx, topk_weights, is_token_in_rank, combined_x, combined_topk_weights; num_rows == 0 for
 * combine's x and topk_weights; recv_capacity == 0 for the dispatch's outputs. Then num_topk alone says whether
 * top-k entries travel (every PE passes the same). A NULL for an array with elements is refused. Dtypes:
 * topk_idx int64, topk_weights and scales fp32, counts int32, is_token_in_rank bool (1 byte); x as given.
 *
 * This header compiles as C and C++.
 */
#ifndef TSHMEM_EP_H
#define TSHMEM_EP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define TSHMEM_EP_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success. */
typedef enum tshmem_ep_status {
  TSHMEM_EP_SUCCESS = 0,
  TSHMEM_EP_ERR_INVALID_ARGUMENT = 1, /**< An argument breaks a documented rule (null, dtype, shape, alignment). */
  TSHMEM_EP_ERR_INVALID_VALUE = 2,    /**< A value inside a device tensor breaks a rule (expert id out of range). */
  TSHMEM_EP_ERR_BUFFER_TOO_SMALL = 3, /**< The call does not fit the buffer (num_nvl_bytes, num_rdma_bytes) or the
                                           outputs' capacity; the message says how many bytes or rows it needs. */
  TSHMEM_EP_ERR_NOT_INITIALIZED = 4,  /**< tshmem is not initialised, or it has no GPU heap. */
  TSHMEM_EP_ERR_TSHMEM = 5,           /**< A tshmem call failed; the message carries tshmem's. */
  TSHMEM_EP_ERR_CUDA = 6,             /**< A CUDA runtime call failed. */
  TSHMEM_EP_ERR_OUT_OF_MEMORY = 7,    /**< An allocation failed. */
  TSHMEM_EP_ERR_UNSUPPORTED = 8,      /**< Valid by the semantics but beyond this implementation's limits. */
  TSHMEM_EP_ERR_INTERNAL = 9,         /**< A broken invariant inside the library: please report it. */
  TSHMEM_EP_NUM_STATUS                /**< Number of codes; not a status. */
} tshmem_ep_status_t;

/** Element types of the token rows `x`. Dispatch takes BFLOAT16 or FLOAT8_E4M3 (with per-128-channel fp32
 *  scales); combine takes BFLOAT16. The other values exist so that a binding can name what it was given. */
typedef enum tshmem_ep_dtype {
  TSHMEM_EP_BFLOAT16 = 0,
  TSHMEM_EP_FLOAT8_E4M3 = 1,
  TSHMEM_EP_FLOAT32 = 2,
  TSHMEM_EP_FLOAT16 = 3,
  TSHMEM_EP_INT64 = 4,
  TSHMEM_EP_INT32 = 5,
  TSHMEM_EP_NUM_DTYPES
} tshmem_ep_dtype_t;

/** Channels per fp8 scale: x_scales is [T, hidden / 128] fp32. */
#define TSHMEM_EP_FP8_BLOCK 128
/** Limits of this implementation: top-k entries per token, PEs, experts. */
#define TSHMEM_EP_MAX_TOPK 32
#define TSHMEM_EP_MAX_PES 1024
#define TSHMEM_EP_MAX_EXPERTS 1024

typedef struct tshmem_ep_buffer *tshmem_ep_buffer_t; /**< Symmetric communication buffer (one per PE). */
typedef struct tshmem_ep_handle *tshmem_ep_handle_t; /**< What a notify learnt: routes of one dispatch. */

/** What a buffer is, as tshmem_ep_buffer_info reports it. */
typedef struct tshmem_ep_buffer_info_st {
  int my_pe;
  int n_pes;
  int pes_per_node; /**< PEs of one node (reached by NVLink load/store); nodes are consecutive PE ranges. */
  int num_nodes;    /**< n_pes / pes_per_node: DeepEP's RDMA ranks. */
  int device;       /**< CUDA device of this PE. */
  int num_blocks;   /**< Thread blocks of the data kernels (tshmem_ep_buffer_set_num_blocks). */
  size_t num_nvl_bytes;
  size_t num_rdma_bytes;
} tshmem_ep_buffer_info_t;

/* ---- errors ------------------------------------------------------------------------------------------------- */

/** Name of a status ("TSHMEM_EP_ERR_INVALID_ARGUMENT"). */
TSHMEM_EP_API const char *tshmem_ep_status_string(tshmem_ep_status_t status);
/** Message of the last failure on this thread ("" if none). Valid until the next failing call on this thread. */
TSHMEM_EP_API const char *tshmem_ep_last_error(void);
/** Size in bytes of one element of `dtype`; 0 for an invalid dtype. */
TSHMEM_EP_API size_t tshmem_ep_dtype_size(tshmem_ep_dtype_t dtype);

/* ---- sizing --------------------------------------------------------------------------------------------------- */

/** Bytes of one dispatched token row in the buffer: x (hidden elements of x_dtype), its scales (fp8), its top-k
 *  ids and weights (num_topk, 0 when not sent) and its source index, each part padded to 16 bytes. 0 when the
 *  arguments break a rule of tshmem_ep_dispatch. */
TSHMEM_EP_API size_t tshmem_ep_dispatch_row_bytes(int64_t hidden, tshmem_ep_dtype_t x_dtype, int64_t num_topk);
/** Bytes of one combined row in the buffer: hidden bf16 values and num_topk fp32 weights (0 when not sent). */
TSHMEM_EP_API size_t tshmem_ep_combine_row_bytes(int64_t hidden, int64_t num_topk);
/**
 * Buffer sizes that hold any dispatch and combine of up to `max_tokens_per_pe` tokens per PE among `n_pes` PEs
 * (every token to every PE; docs/ep.md, "Buffer sizes"): *num_nvl_bytes for what a PE receives, *num_rdma_bytes for
 * the staging of rows bound for other nodes (0 is enough when all PEs share one node).
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_size_hint(int n_pes, int64_t max_tokens_per_pe, int64_t hidden,
                                                            tshmem_ep_dtype_t x_dtype, int64_t num_topk,
                                                            size_t *num_nvl_bytes, size_t *num_rdma_bytes);

/* ---- buffer --------------------------------------------------------------------------------------------------- */

/**
 * Collective (every PE, same sizes): allocates the buffer's symmetric memory with tshmem_malloc (checked for
 * symmetry like every collective allocation): `num_nvl_bytes` receive the rows sent to this PE (dispatch) and
 * the rows returned to it (combine); `num_rdma_bytes` stage the rows this PE sends to PEs of other nodes (the
 * off-node proxy reads its sources from the heap) and hold the low-latency mode's slots. At least one is > 0;
 * both multiples of 16.
 * Fails with TSHMEM_EP_ERR_NOT_INITIALIZED without tshmem_init or without a GPU heap.
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_create(size_t num_nvl_bytes, size_t num_rdma_bytes,
                                                         tshmem_ep_buffer_t *buffer);
/** Collective: waits for the device, frees the buffer's symmetric memory. NULL is a no-op. Handles made from the
 *  buffer must be destroyed first (they are not usable afterwards). */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_destroy(tshmem_ep_buffer_t buffer);
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_info(tshmem_ep_buffer_t buffer, tshmem_ep_buffer_info_t *info);
/** Thread blocks of the dispatch and combine kernels (DeepEP's Config.num_sms); 0 restores the default (the SM
 *  count, or 4 when the job spans nodes). Every PE must use the same value. Results never depend on it. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_set_num_blocks(tshmem_ep_buffer_t buffer, int num_blocks);
/** Bound of the waits for the other PEs' signals in dispatch and combine (default 300000 ms): a PE whose signal
 *  does not come in time (it did not make the same call, or it failed) makes the kernel print which PE, in which
 *  call, and trap; in the low-latency calls it is masked instead and the error recorded (the call ends). 0 leaves
 *  the bound to tshmem (TSHMEM_WAIT_TIMEOUT_MS; unset: none). Local. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_set_timeout_ms(tshmem_ep_buffer_t buffer, int64_t timeout_ms);
/** Waits for `stream`, then returns (and clears) the first value violation the device recorded for this buffer
 *  (INVALID_VALUE with the value and its position) or a buffer overflow caught on the device; SUCCESS if none. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_check_device_errors(tshmem_ep_buffer_t buffer, cudaStream_t stream);

/* ---- layout --------------------------------------------------------------------------------------------------- */

/**
 * DeepEP's get_dispatch_layout. topk_idx [num_tokens, num_topk] int64, entries in [-1, num_experts) (-1: no
 * expert). Outputs (int32 unless said): num_tokens_per_rank [n_pes] (tokens with at least one expert on the PE),
 * num_tokens_per_rdma_rank [num_nodes] or NULL (tokens with at least one expert on a PE of the node),
 * num_tokens_per_expert [num_experts], is_token_in_rank [num_tokens, n_pes] bool. Rules: num_experts % n_pes
 * == 0, 1 <= num_topk <= TSHMEM_EP_MAX_TOPK, num_tokens >= 0 (0: counts are zero). Local (not collective).
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_get_dispatch_layout(tshmem_ep_buffer_t buffer, const int64_t *topk_idx,
                                                               int64_t num_tokens, int64_t num_topk,
                                                               int64_t num_experts, int32_t *num_tokens_per_rank,
                                                               int32_t *num_tokens_per_rdma_rank,
                                                               int32_t *num_tokens_per_expert, bool *is_token_in_rank,
                                                               cudaStream_t stream);

/* ---- handles and notify --------------------------------------------------------------------------------------- */

/** A handle for dispatches of up to `max_tokens` tokens from this PE with `num_experts` experts (device memory,
 *  allocated here: create handles outside CUDA-graph capture and reuse them). Local. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_create(tshmem_ep_buffer_t buffer, int64_t max_tokens,
                                                         int64_t num_experts, tshmem_ep_handle_t *handle);
/** Waits for the device and frees the handle. NULL is a no-op. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_destroy(tshmem_ep_handle_t handle);

/**
 * Collective on `stream`: every PE publishes how many of its tokens go to each PE (from is_token_in_rank
 * [num_tokens, n_pes]) and to each expert (num_tokens_per_expert [num_experts], the layout's), and fills `handle`
 * with the routes: per source PE the offset of its rows in this PE's received rows, per token and destination the
 * row's position there (DeepEP's prefix matrices and send map). expert_alignment >= 1.
 *  - num_worst_tokens == 0: waits for `stream` once; *num_recv_tokens (host) = rows this PE receives;
 *    num_recv_tokens_per_expert (host, [num_experts / n_pes], may be NULL) = per local expert, the received
 *    top-k entries naming it, aligned up to expert_alignment.
 *  - num_worst_tokens > 0: no host synchronisation (capturable); *num_recv_tokens = -1 and the host list is not
 *    written; the device holds the counts (tshmem_ep_handle_device_counts). Receiving more than num_worst_tokens
 *    rows is an error recorded on the device (nothing is written beyond).
 * A value error recorded by an earlier layout call on any PE fails the notify on every PE (INVALID_VALUE).
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_notify(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle,
                                                  const bool *is_token_in_rank, const int32_t *num_tokens_per_expert,
                                                  int64_t num_tokens, int64_t num_experts, int64_t expert_alignment,
                                                  int64_t num_worst_tokens, int64_t *num_recv_tokens,
                                                  int32_t *num_recv_tokens_per_expert, cudaStream_t stream);
/** After a notify without num_worst_tokens: the received row count (host). -1 before, or after a worst-case one. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_num_recv_tokens(tshmem_ep_handle_t handle, int64_t *num_recv_tokens);
/** Device int32 [1 + num_experts / n_pes]: the received row count, then the aligned per-local-expert counts, as
 *  the last notify on the handle's stream left them (valid in stream order). */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_device_counts(tshmem_ep_handle_t handle, const int32_t **counts);

/** Device int32 [n_pes, *row_words]: every PE's published row of the last notify on the handle (valid in stream
 *  order); the first n_pes words of row p are PE p's token counts per destination PE, so the cumulative sum over rows
 *  of those columns is DeepEP's rank_prefix_matrix. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_handle_published_matrix(tshmem_ep_handle_t handle, const int32_t **matrix,
                                                                   int64_t *row_words);

/* ---- dispatch and combine ------------------------------------------------------------------------------------- */

/**
 * Collective on `stream`: sends x [num_tokens, hidden] (BFLOAT16, or FLOAT8_E4M3 with x_scales [num_tokens,
 * hidden / 128] fp32) along the handle's routes. Optional: topk_idx [num_tokens, num_topk] int64 and topk_weights
 * (same shape, fp32) travel with the rows (both or neither; num_topk 0 when neither). num_tokens equals the
 * notify's. Outputs, `recv_capacity` rows each (>= the received count, or num_worst_tokens): recv_x [rows,
 * hidden] (x_dtype), recv_x_scales [rows, hidden / 128] (fp8, else NULL), recv_topk_idx / recv_topk_weights
 * [rows, num_topk] (when topk_idx is given; each may be NULL), recv_src_idx [rows] int32 (the row's token index
 * on its source PE; may be NULL). Rows past the received count: recv_topk_idx -1, recv_topk_weights 0,
 * recv_src_idx -1, recv_x and recv_x_scales unchanged. Rules: hidden >= 1 and hidden * element size a multiple of 16
 * (fp8: hidden a multiple of 128); x, recv_x 16-byte aligned. May be called again with the same handle (cached
 * dispatch: only x and its scales need to be given then).
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_dispatch(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle, const void *x,
                                                    tshmem_ep_dtype_t x_dtype, const float *x_scales,
                                                    int64_t num_tokens, int64_t hidden, const int64_t *topk_idx,
                                                    const float *topk_weights, int64_t num_topk, void *recv_x,
                                                    float *recv_x_scales, int64_t *recv_topk_idx,
                                                    float *recv_topk_weights, int32_t *recv_src_idx,
                                                    int64_t recv_capacity, cudaStream_t stream);

/**
 * Collective on `stream`: x [num_rows, hidden] BFLOAT16, one row per received row of the handle's dispatch (same
 * order; num_rows >= the received count, rows past it are ignored), returns to the rows' home PEs:
 * combined_x [num_tokens, hidden] bf16 with combined_x[t] = bf16(((sum over PEs p ascending of float(x_p[row of
 * t])) + bias0[t]) + bias1[t]), fp32 accumulation, one rounding; a token sent nowhere gets bias only (0 without).
 * Optional topk_weights [num_rows, num_topk] fp32 -> combined_topk_weights [num_tokens, num_topk] summed the same
 * way (both or neither). bias0, bias1: [num_tokens, hidden] bf16 or NULL, 16-byte aligned. After a worst-case
 * notify num_rows must be >= num_worst_tokens.
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_combine(tshmem_ep_buffer_t buffer, tshmem_ep_handle_t handle, const void *x,
                                                   tshmem_ep_dtype_t x_dtype, int64_t num_rows, int64_t hidden,
                                                   const float *topk_weights, int64_t num_topk, const void *bias0,
                                                   const void *bias1, void *combined_x, float *combined_topk_weights,
                                                   cudaStream_t stream);

/* ---- low-latency mode (DeepEP's low_latency_dispatch / low_latency_combine; docs/ep.md, "Low-latency mode") ---- */

/** Phases of a low-latency call: SEND issues the transfers and returns; RECV waits for them and writes the
 *  outputs (DeepEP's receive hook). BOTH is one ordinary call. */
#define TSHMEM_EP_LL_SEND 1
#define TSHMEM_EP_LL_RECV 2
#define TSHMEM_EP_LL_BOTH 3

/** Arguments of tshmem_ep_low_latency_dispatch. L = num_experts / n_pes local experts, M = the maximum tokens per
 *  PE (num_max_dispatch_tokens_per_rank, every PE the same), N = n_pes. */
typedef struct tshmem_ep_ll_dispatch_args_st {
  const void *x;           /**< [num_tokens, hidden] bf16 */
  const int64_t *topk_idx; /**< [num_tokens, num_topk], entries in [-1, num_experts) */
  int64_t num_tokens;      /**< 0 <= num_tokens <= num_max_dispatch_tokens_per_rank */
  int64_t hidden;          /**< bf16: a multiple of 8; fp8: of 128 (of 512 with use_ue8m0) */
  int64_t num_topk;        /**< 1 .. TSHMEM_EP_MAX_TOPK */
  int64_t num_max_dispatch_tokens_per_rank;
  int64_t num_experts;
  int use_fp8;     /**< quantise to fp8 e4m3 per 128 channels on the sender */
  int round_scale; /**< the scales rounded up to powers of 2 */
  int use_ue8m0;   /**< the scales as their 8-bit exponents, four packed in an int32 (needs round_scale) */
  /** Outputs. packed_recv_x [L, N * M, hidden] (bf16, or fp8 with use_fp8). packed_recv_x_scales (use_fp8 only):
   *  fp32 [L, N * M, hidden / 128] or, with use_ue8m0, int32 [L, N * M, hidden / 512], in both cases stored
   *  column-major in the last two dimensions: element (e, j, s) at e * N * M * S + s * N * M + j (S the scale
   *  columns; DeepEP's TMA layout). */
  void *packed_recv_x;
  void *packed_recv_x_scales;
  int32_t *packed_recv_count;                  /**< [L]: rows received per local expert */
  int32_t *packed_recv_src_info;               /**< [L, N * M]: each row's token index on its source PE */
  int64_t *packed_recv_layout_range;           /**< [L, N]: (count | begin << 32) of each source PE's rows */
  int32_t *cumulative_local_expert_recv_stats; /**< [L] or NULL: the received rows are added */
  int64_t *dispatch_wait_recv_cost_stats;      /**< [N] or NULL: GPU clock cycles waited per source PE are added */
} tshmem_ep_ll_dispatch_args_t;

/** Arguments of tshmem_ep_low_latency_combine. */
typedef struct tshmem_ep_ll_combine_args_st {
  const void *x;               /**< [L, N * M, hidden] bf16 (the experts' outputs); ignored with zero_copy */
  const int64_t *topk_idx;     /**< [num_tokens, num_topk], the dispatch's */
  const float *topk_weights;   /**< [num_tokens, num_topk] */
  const int32_t *src_info;     /**< the dispatch's packed_recv_src_info */
  const int64_t *layout_range; /**< the dispatch's packed_recv_layout_range */
  int64_t num_tokens;          /**< the dispatch's num_tokens (rows of combined_x) */
  int64_t hidden;              /**< a multiple of 8 */
  int64_t num_topk;
  int64_t num_max_dispatch_tokens_per_rank;
  int64_t num_experts;
  int zero_copy;                         /**< x was written into tshmem_ep_low_latency_next_combine_buffer */
  void *combined_x;                      /**< [num_tokens, hidden] bf16 */
  int64_t *combine_wait_recv_cost_stats; /**< [N] or NULL */
} tshmem_ep_ll_combine_args_t;

/** Bytes of num_rdma_bytes the low-latency calls need for these shapes (two alternating slots; DeepEP's
 *  get_low_latency_rdma_size_hint, a multiple of 16). 0 when an argument is out of range. */
TSHMEM_EP_API size_t tshmem_ep_low_latency_rdma_size_hint(int64_t num_max_dispatch_tokens_per_rank, int64_t hidden,
                                                          int n_pes, int64_t num_experts);
/**
 * Collective on `stream`: every PE sends each (token, top-k entry) to the PE of the entry's expert, into that
 * expert's packed rows, ordered by source PE, then by token, then by top-k position (deterministic). No host
 * synchronisation (capturable). phases: TSHMEM_EP_LL_BOTH, or SEND then later RECV (the hook) with the same
 * arguments: a call with SEND writes the slot it used to *slot (may be NULL), a RECV-only call reads it. A masked
 * PE (tshmem_ep_low_latency_update_mask) is neither sent to nor waited for (its count is 0). A wait that passes the
 * buffer's timeout prints which PE it waited for, masks it and records the error (tshmem_ep_check_device_errors).
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_dispatch(tshmem_ep_buffer_t buffer,
                                                                const tshmem_ep_ll_dispatch_args_t *args, int phases,
                                                                int *slot, cudaStream_t stream);
/**
 * Collective on `stream`: each PE's expert outputs return to the tokens' PEs, where combined_x[t] =
 * bf16(sum over k = 0 .. num_topk-1 with topk_idx[t][k] >= 0 on an unmasked PE of
 * float(y_k) * topk_weights[t][k]), fp32, in k order, one rounding. phases and slot as for dispatch.
 */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_combine(tshmem_ep_buffer_t buffer,
                                                               const tshmem_ep_ll_combine_args_t *args, int phases,
                                                               int *slot, cudaStream_t stream);
/** The send area the NEXT low-latency call uses, as bf16 [L, N * M, hidden]: write the experts' outputs there
 *  and combine with zero_copy (DeepEP's get_next_low_latency_combine_buffer). */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_next_combine_buffer(tshmem_ep_buffer_t buffer,
                                                                           int64_t num_max_dispatch_tokens_per_rank,
                                                                           int64_t hidden, int64_t num_experts,
                                                                           void **ptr);
/** Collective among the PEs not masked, on `stream`: a barrier, zeroes both slots' signals, a barrier (after
 *  normal-mode calls, before low-latency ones; DeepEP's clean_low_latency_buffer). A masked PE is neither signalled
 *  nor waited for; one not masked that does not come within the buffer's timeout is masked and the error recorded,
 *  as dispatch does. The next low-latency call uses slot 0. Each pair of PEs counts the barriers it passed
 *  together: a PE that was masked (and masked the others) while they cleaned rejoins once every side unmasks; a PE
 *  masked at a timeout is out of step with the others' counts and stays out, as a masked rank does in DeepEP. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_clean(tshmem_ep_buffer_t buffer,
                                                             int64_t num_max_dispatch_tokens_per_rank, int64_t hidden,
                                                             int64_t num_experts, cudaStream_t stream);
/** The rank mask (local, on `stream`): mask != 0 masks `pe`, 0 unmasks it. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_update_mask(tshmem_ep_buffer_t buffer, int pe, int mask,
                                                                   cudaStream_t stream);
/** Copies the mask into mask_status [n_pes] int32 (device; 1 masked, 0 not), on `stream`. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_query_mask(tshmem_ep_buffer_t buffer, int32_t *mask_status,
                                                                  cudaStream_t stream);
/** Unmasks every PE, on `stream`. */
TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_low_latency_clean_mask(tshmem_ep_buffer_t buffer, cudaStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_EP_H */
