/*
 * tshmem_moe — MoE routing kernels (gating, counting, the expert-major "fused" layout, expand and reduce).
 *
 * The C API of libtshmem_moe, a port of DeepSeek TileKernels' tile_kernels.moe and a separate library that
 * depends on the CUDA runtime only. Semantics (arguments, shapes, dtypes, outputs, edge cases, errors) of every
 * entry point: docs/moe.md, "Semantics of the entry points"; the comments below summarise them.
 *
 * Tensors are small views (pointer, dtype, shape, strides in elements, device). A view whose `device` is
 * TSHMEM_MOE_DEVICE_CPU lives in host memory: the call then runs the CPU reference and makes no
 * CUDA call at all. A view with `device >= 0` lives on that CUDA device: the call runs the CUDA kernels.
 *
 * Device rules: every call runs on the device of its primary input (the first tensor argument) under a guard
 * that makes it current and restores the caller's device on return; every other tensor, and every
 * preallocated output, must be on that same device or the call fails with TSHMEM_MOE_ERR_DEVICE_MISMATCH
 * (the message names the tensor and both devices). Nothing is copied between devices.
 *
 * Outputs: an output view whose `data` is NULL is allocated by the library, stream-ordered on `stream`
 * (cudaMallocAsync) on the primary input's device, or with malloc for CPU calls; free it with
 * tshmem_moe_tensor_free. An output whose `data` is set is checked (dtype, shape, strides, device) and written.
 *
 * Library memory: per device, a small error record; per (device, stream), on the first group_count, aux_fi or
 * get_fused_mapping call on that stream, a 40 KiB workspace (a cudaMalloc, which may synchronise the device, and
 * a memset on the stream), kept until the process exits. None under graph capture, on cudaStreamPerThread or
 * past 64 streams per device: those calls then take kernel forms that need none (the same results).
 *
 * Errors: every call returns a status; tshmem_moe_last_error() describes the last failure on the calling
 * thread (the call, the value and the rule that was broken). Index values that the GPU finds out of range
 * (e.g. an expert id outside [-1, E)) are never undefined behaviour: the offending entry is skipped and the
 * violation is recorded per device. In the default check mode (TSHMEM_MOE_CHECK_SYNC) the call then
 * synchronises its stream and returns TSHMEM_MOE_ERR_INVALID_VALUE; in TSHMEM_MOE_CHECK_DEFERRED mode the
 * call stays asynchronous and tshmem_moe_check_device_errors() reports the first recorded violation.
 *
 * This header compiles as C and C++.
 */
#ifndef TSHMEM_MOE_H
#define TSHMEM_MOE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define TSHMEM_MOE_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success. */
typedef enum tshmem_moe_status {
  TSHMEM_MOE_SUCCESS = 0,
  TSHMEM_MOE_ERR_INVALID_ARGUMENT = 1, /**< A shape, dtype, stride or scalar rule (docs/moe.md) is broken. */
  TSHMEM_MOE_ERR_DEVICE_MISMATCH = 2,  /**< A tensor lives on another device than the primary input. */
  TSHMEM_MOE_ERR_INVALID_VALUE = 3,    /**< A value inside a tensor breaks a rule (index out of range, NaN). */
  TSHMEM_MOE_ERR_UNSUPPORTED = 4,      /**< Valid by the semantics but beyond this port's kernel limits. */
  TSHMEM_MOE_ERR_NO_DEVICE = 5,        /**< No CUDA device, or the device index does not exist. */
  TSHMEM_MOE_ERR_OUT_OF_MEMORY = 6,    /**< An allocation failed. */
  TSHMEM_MOE_ERR_CUDA = 7,             /**< A CUDA runtime call failed. */
  TSHMEM_MOE_ERR_INTERNAL = 8,         /**< A broken invariant inside the library: please report it. */
  TSHMEM_MOE_NUM_STATUS                /**< Number of codes; not a status. */
} tshmem_moe_status_t;

/** Element types. Sizes: bool, fp8 1 byte; bf16 2; int32, fp32 4; int64 8. */
typedef enum tshmem_moe_dtype {
  TSHMEM_MOE_BOOL = 0,
  TSHMEM_MOE_INT32 = 1,
  TSHMEM_MOE_INT64 = 2,
  TSHMEM_MOE_FLOAT32 = 3,
  TSHMEM_MOE_BFLOAT16 = 4,
  TSHMEM_MOE_FLOAT8_E4M3 = 5, /**< float8_e4m3fn: no infinities, max 448. */
  TSHMEM_MOE_NUM_DTYPES
} tshmem_moe_dtype_t;

#define TSHMEM_MOE_MAX_DIMS 4
#define TSHMEM_MOE_DEVICE_CPU (-1)

/** A tensor view. Strides are in elements. The view never owns memory, except after the library allocated it
 *  (then tshmem_moe_tensor_free releases it). */
typedef struct tshmem_moe_tensor {
  void *data;
  int64_t shape[TSHMEM_MOE_MAX_DIMS];
  int64_t strides[TSHMEM_MOE_MAX_DIMS];
  int32_t ndim;
  tshmem_moe_dtype_t dtype;
  int32_t device; /**< CUDA device index, or TSHMEM_MOE_DEVICE_CPU for host memory. */
} tshmem_moe_tensor_t;

/** Scoring functions of top2_sum_gate. IDENTITY exists for parsing only and is rejected. */
typedef enum tshmem_moe_scoring_func {
  TSHMEM_MOE_SCORING_SIGMOID = 0,
  TSHMEM_MOE_SCORING_SQRTSOFTPLUS = 1,
  TSHMEM_MOE_SCORING_SOFTMAX = 2,
  TSHMEM_MOE_SCORING_IDENTITY = 3
} tshmem_moe_scoring_func_t;

/** How device-side value checks are reported (see the header comment). */
typedef enum tshmem_moe_check_mode {
  TSHMEM_MOE_CHECK_SYNC = 0,    /**< Default: calls that read indices synchronise and return the error. */
  TSHMEM_MOE_CHECK_DEFERRED = 1 /**< No synchronisation; read with tshmem_moe_check_device_errors. */
} tshmem_moe_check_mode_t;

/* ---- errors, tensors, configuration ------------------------------------------------------------------- */

/** Name of a status ("TSHMEM_MOE_ERR_DEVICE_MISMATCH"). */
TSHMEM_MOE_API const char *tshmem_moe_status_string(tshmem_moe_status_t status);
/** Message of the last failure on this thread ("" if none). Valid until the next failing call here. */
TSHMEM_MOE_API const char *tshmem_moe_last_error(void);
/** Size in bytes of one element of `dtype`, 0 for an invalid dtype. */
TSHMEM_MOE_API size_t tshmem_moe_dtype_size(tshmem_moe_dtype_t dtype);
/** A contiguous (row-major) view. */
TSHMEM_MOE_API tshmem_moe_tensor_t tshmem_moe_tensor_make(void *data, tshmem_moe_dtype_t dtype, int32_t ndim,
                                                          const int64_t *shape, int32_t device);
/** Number of elements of a view. */
TSHMEM_MOE_API int64_t tshmem_moe_tensor_numel(const tshmem_moe_tensor_t *t);
/** Frees a library-allocated tensor (cudaFreeAsync on `stream` on its device, or free for CPU) and sets
 *  `data` to NULL. A NULL `data` is a no-op. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_tensor_free(tshmem_moe_tensor_t *t, cudaStream_t stream);

/** Parses "sigmoid", "sqrtsoftplus", "softmax", "identity", case-insensitively. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_scoring_func_parse(const char *name, tshmem_moe_scoring_func_t *func);

/** SM-count override used to size grids (results never depend on it). 0 clears it. It is validated against
 *  each device it is used on: a call on a device with fewer SMs fails with INVALID_ARGUMENT. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_set_num_sms(int num_sms);
/** SM count of `device` (cached per device index). */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_device_num_sms(int device, int *num_sms);
/** The override if set (and valid for `device`), else the device's SM count. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_num_sms(int device, int *num_sms);

/** Process-wide check mode; default TSHMEM_MOE_CHECK_SYNC. */
TSHMEM_MOE_API void tshmem_moe_set_check_mode(tshmem_moe_check_mode_t mode);
TSHMEM_MOE_API tshmem_moe_check_mode_t tshmem_moe_get_check_mode(void);
/** Synchronises `stream` on `device`, then returns (and clears) the first value violation recorded on that
 *  device since the last report, as TSHMEM_MOE_ERR_INVALID_VALUE with a message; SUCCESS if none. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_check_device_errors(int device, cudaStream_t stream);

/* ---- gating (docs/moe.md, "Gating"; src/moe/gate) ---------------------------------------------------------------- */

/** topk_gate (docs/moe.md). scores [T, E] fp32 contiguous; 1 <= num_topk <= E. topk_idx: [T, K] int64, the K best
 *  experts per row in descending score, ties to the smaller index (a stable descending sort; true removal, so
 *  -inf scores never repeat an index). Port limit: E <= 1024. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_topk_gate(const tshmem_moe_tensor_t *scores, int64_t num_topk,
                                                        tshmem_moe_tensor_t *topk_idx, cudaStream_t stream);

/** topk_sum_and_topk_group_idx (docs/moe.md). scores [T, G, Epg] fp32 contiguous; num_topk_sum in {1, 2},
 *  <= Epg; 0 <= num_topk_groups <= G <= 32. group_idx: [T, num_topk_groups] int64. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_topk_sum_and_topk_group_idx(const tshmem_moe_tensor_t *scores,
                                                                          int64_t num_topk_sum, int64_t num_topk_groups,
                                                                          tshmem_moe_tensor_t *group_idx,
                                                                          cudaStream_t stream);

/** Scalar arguments of top2_sum_gate, in TileKernels' order. */
typedef struct tshmem_moe_top2_sum_gate_params {
  int64_t num_topk;
  int64_t num_topk_groups;
  int64_t num_groups;
  int32_t use_shared_as_routed;
  int64_t num_shared_experts;
  float routed_scaling_factor;
  int64_t ep_rank;
  int64_t num_ep_ranks;
  int64_t tp_rank;
  int64_t num_tp_ranks;
  tshmem_moe_scoring_func_t scoring_func;
} tshmem_moe_top2_sum_gate_params_t;

/** top2_sum_gate (docs/moe.md). logits [T, R] fp32, bias [R] fp32. Optional (NULL): mask [T] bool,
 *  fix_routing_mask [T] bool, to_physical_map [R+S, D] int32 with logical_count [R+S] int32, unmapped_topk_idx
 *  [T, K] int64 (in/out, last-dim stride 1). Outputs topk_idx [T, K+S] int64, topk_weights [T, K+S] fp32.
 *  Replica arithmetic is 64-bit. Non-finite logits, fix-routing ids outside [0, R) and logical_count outside
 *  [1, D] are value errors. Port limits: R <= 1024, K + S <= 32; group mode G <= 32, R / G <= 32. */
TSHMEM_MOE_API tshmem_moe_status_t
tshmem_moe_top2_sum_gate(const tshmem_moe_tensor_t *logits, const tshmem_moe_tensor_t *bias,
                         const tshmem_moe_top2_sum_gate_params_t *params, const tshmem_moe_tensor_t *mask,
                         const tshmem_moe_tensor_t *fix_routing_mask, const tshmem_moe_tensor_t *to_physical_map,
                         const tshmem_moe_tensor_t *logical_count, tshmem_moe_tensor_t *unmapped_topk_idx,
                         tshmem_moe_tensor_t *topk_idx, tshmem_moe_tensor_t *topk_weights, cudaStream_t stream);

/* ---- counting (docs/moe.md, "Counting"; src/moe/count) ----------------------------------------------------------- */

/** group_count (docs/moe.md). group_idx [T, K] int64 contiguous, entries in [-1, num_groups).
 *  counts: [num_groups] int32. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_group_count(const tshmem_moe_tensor_t *group_idx, int64_t num_groups,
                                                          tshmem_moe_tensor_t *counts, cudaStream_t stream);

/** aux_fi (docs/moe.md). topk_idx [T, K] int64, entries in [-1, E). fi: [E] fp32,
 *  fi[e] = (float(count_e) * E) / float(T * A), computed once per expert from integer counts (deterministic,
 *  equal to the reference). */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_aux_fi(const tshmem_moe_tensor_t *topk_idx, int64_t num_experts,
                                                     int64_t num_aux_topk, tshmem_moe_tensor_t *fi,
                                                     cudaStream_t stream);

/* ---- row-wise transforms of a top-k result (docs/moe.md; src/moe/rowwise) ---------------------------------------- */

/** normalize_weight (docs/moe.md). topk_weights [T, K] fp32. denominator [T] = 1e-20f + w0 + w1 + ... (in
 *  order), normalized = w / d. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_normalize_weight(const tshmem_moe_tensor_t *topk_weights,
                                                               tshmem_moe_tensor_t *denominator,
                                                               tshmem_moe_tensor_t *normalized, cudaStream_t stream);

/** mask_indices_by_tp (docs/moe.md). indices [T, K] int64 or int32, contiguous. out: same shape and dtype. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_mask_indices_by_tp(const tshmem_moe_tensor_t *indices, int64_t n,
                                                                 int64_t num_ep_ranks, int64_t tp_rank,
                                                                 int64_t num_tp_ranks, tshmem_moe_tensor_t *out,
                                                                 cudaStream_t stream);

/** inplace_unique_group_indices (docs/moe.md). group_indices [T, K] int64 contiguous, modified in place;
 *  num_groups <= 128; entries must be < align(num_groups, 64) (negative entries are left alone). */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_inplace_unique_group_indices(tshmem_moe_tensor_t *group_indices,
                                                                           int64_t num_groups, cudaStream_t stream);

/* ---- the fused layout (docs/moe.md, "The fused layout"; src/moe/mapping) ----------------------------------------- */

/** Outputs of get_fused_mapping, in TileKernels' order. */
typedef struct tshmem_moe_fused_mapping {
  tshmem_moe_tensor_t pos_to_expert;         /**< [P] int32 */
  tshmem_moe_tensor_t pos_to_token;          /**< [P] int32 */
  tshmem_moe_tensor_t pos_to_token_topk;     /**< [P] int32 */
  tshmem_moe_tensor_t token_topk_to_pos;     /**< [T, K] int32 */
  tshmem_moe_tensor_t expert_start;          /**< [E] int32 */
  tshmem_moe_tensor_t expert_end;            /**< [E] int32 */
  tshmem_moe_tensor_t num_tokens_per_expert; /**< [E] int32, aligned counts */
} tshmem_moe_fused_mapping_t;

/** get_fused_mapping (docs/moe.md). topk_idx [T, K] int64 contiguous with entries in [-1, E); E <= 1024;
 *  alignment >= 1. num_expanded_tokens P > 0: outputs of length P (P must be >= sum of aligned counts: rows
 *  beyond it are a value error). P == 0 and not force_no_sync: the library allocates an upper bound,
 *  synchronises, and returns the pos_to_* views trimmed to P = sum of aligned counts;
 *  `num_tokens_per_expert_host` (E entries, may be NULL) receives the aligned counts and `*host_list_filled`
 *  (may be NULL) is set to 1 (else 0); the pos_to_* outputs must then be library-allocated. Order within an
 *  expert segment: ascending flat slot f = t*K + k (the canonical order); padding at the tail of each
 *  segment. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_get_fused_mapping(const tshmem_moe_tensor_t *topk_idx,
                                                                int64_t num_experts, int64_t num_expanded_tokens,
                                                                int64_t alignment, int32_t force_no_sync,
                                                                tshmem_moe_fused_mapping_t *mapping,
                                                                int32_t *num_tokens_per_expert_host,
                                                                int32_t *host_list_filled, cudaStream_t stream);

/** expand_to_fused (docs/moe.md). x [T, H] (any dtype, copied bit for bit), token_topk_to_pos [T, K] int32,
 *  pos_to_expert [P] int32 (sign only). x_fused [P, H]: padding rows zeroed (also when T == 0). Positions
 *  outside [-1, P) are value errors. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_expand_to_fused(const tshmem_moe_tensor_t *x,
                                                              const tshmem_moe_tensor_t *token_topk_to_pos,
                                                              const tshmem_moe_tensor_t *pos_to_expert,
                                                              tshmem_moe_tensor_t *x_fused, cudaStream_t stream);

/** expand_to_fused_with_sf (docs/moe.md). As expand_to_fused, plus x_sf [T, hidden_sf] fp32 or int32 (packed
 *  UE8M0), row-major contiguous; num_per_channels in {32, 128}. sf_fused [P, hidden_sf]: row-major, or with
 *  use_tma_aligned_col_major_sf column-major with strides (1, align(P, 4)) (required for int32 sf). */
TSHMEM_MOE_API tshmem_moe_status_t
tshmem_moe_expand_to_fused_with_sf(const tshmem_moe_tensor_t *x, const tshmem_moe_tensor_t *x_sf,
                                   int64_t num_per_channels, const tshmem_moe_tensor_t *token_topk_to_pos,
                                   const tshmem_moe_tensor_t *pos_to_expert, int32_t use_tma_aligned_col_major_sf,
                                   tshmem_moe_tensor_t *x_fused, tshmem_moe_tensor_t *sf_fused, cudaStream_t stream);

/* ---- reduction (docs/moe.md, "Reduction"; src/moe/reduce) -------------------------------------------------------- */

/** reduce_fused (docs/moe.md). x [P, H] fp32 or bf16 with H % 256 == 0; x_sf [P] fp32 (optional);
 *  topk_weights [T, K] fp32 (optional: weight 1); token_topk_to_pos [T, K] int32; fp8_format NULL or ""
 *  (output dtype of x) or "e4m3" (float8_e4m3fn, saturating: |v| > 448 gives +-448, NaN stays NaN); sf [1]
 *  fp32 only with "e4m3". y [T, H]: acc = fmaf(x[p,i], s, acc) in slot order, times sf, then a
 *  round-to-nearest-even cast. */
TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_reduce_fused(const tshmem_moe_tensor_t *x,
                                                           const tshmem_moe_tensor_t *x_sf,
                                                           const tshmem_moe_tensor_t *topk_weights,
                                                           const tshmem_moe_tensor_t *token_topk_to_pos,
                                                           const char *fp8_format, const tshmem_moe_tensor_t *sf,
                                                           tshmem_moe_tensor_t *y, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* TSHMEM_MOE_H */
