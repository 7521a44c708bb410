// The per-device record of value violations found by kernels. Shared by host and device code: kernels
// record the first violation (code, value, position) with an atomicCAS on `code`; the host reads it back.
#pragma once

#include <cstdint>

namespace tshmem_moe {

// One code per rule a kernel checks; value_error_text() in core/device.cc gives the tensor and rule for each.
enum ValueErrorCode : int {
  kNoValueError = 0,
  kErrGroupIdxRange = 1,    // group_count: group_idx outside [-1, num_groups)
  kErrTopkIdxRange = 2,     // aux_fi / get_fused_mapping: topk_idx outside [-1, num_experts)
  kErrUniqueRange = 3,      // inplace_unique: group_indices >= align(num_groups, 64)
  kErrPosRange = 4,         // expand/reduce: token_topk_to_pos outside [-1, P)
  kErrNonFinite = 5,        // top2_sum_gate: logits NaN or inf
  kErrFixRoutingIdx = 6,    // top2_sum_gate: unmapped_topk_idx of a fix-routing row outside [0, R)
  kErrLogicalCount = 7,     // top2_sum_gate: logical_count outside [1, D]
  kErrMappingOverflow = 8,  // get_fused_mapping: aligned counts exceed num_expanded_tokens
  kNumValueErrors
};

struct DeviceError {
  int code;
  int pad;
  long long value;
  long long position;
  long long bound;
};

#ifdef __CUDACC__
__device__ __forceinline__ void record_value_error(DeviceError *err, int code, long long value, long long position,
                                                   long long bound) {
  if (atomicCAS(&err->code, 0, code) == 0) {
    err->value = value;
    err->position = position;
    err->bound = bound;
  }
}
#endif

}  // namespace tshmem_moe
