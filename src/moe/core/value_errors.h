// The registry of value rules: every rule a kernel checks on the values of a tensor, one line each (its code, the
// tensor it names and the rule), from which both the codes kernels record and the text of the message the host
// gives (finish_value_checks, core/device.cc) are made. Kernels record the first violation (code, value,
// position, bound) in the device's DeviceError with an atomicCAS on `code`; the host reads it back. Shared by
// host and device code. A new rule is a new line here, with the next code.
#pragma once

#include <cstdint>

namespace tshmem_moe {

// X(name, code, tensor, rule)
#define TSHMEM_MOE_VALUE_RULES(X)                                                                        \
  /* group_count */                                                                                      \
  X(kErrGroupIdxRange, 1, "group_idx", "entries must be in [-1, num_groups)")                            \
  /* aux_fi, get_fused_mapping */                                                                        \
  X(kErrTopkIdxRange, 2, "topk_idx", "entries must be in [-1, num_experts)")                             \
  /* inplace_unique_group_indices */                                                                     \
  X(kErrUniqueRange, 3, "group_indices", "non-negative entries must be < align(num_groups, 64)")         \
  /* expand_to_fused(_with_sf), reduce_fused */                                                          \
  X(kErrPosRange, 4, "token_topk_to_pos", "entries must be in [-1, P) where P is the fused row count")   \
  /* top2_sum_gate */                                                                                    \
  X(kErrNonFinite, 5, "logits", "all values must be finite (no NaN or inf)")                             \
  X(kErrFixRoutingIdx, 6, "unmapped_topk_idx", "fix-routing entries must be in [0, num_routed_experts)") \
  X(kErrLogicalCount, 7, "logical_count", "entries must be in [1, to_physical_map.shape[1]]")            \
  /* get_fused_mapping */                                                                                \
  X(kErrMappingOverflow, 8, "num_expanded_tokens", "must be >= the sum of aligned per-expert counts")

// kNoValueError (0), one code per rule, kNumValueErrors.
#define TSHMEM_MOE_VALUE_RULE_CODE(name, code, tensor, rule) name = code,
enum ValueErrorCode : int { kNoValueError = 0, TSHMEM_MOE_VALUE_RULES(TSHMEM_MOE_VALUE_RULE_CODE) kNumValueErrors };
#undef TSHMEM_MOE_VALUE_RULE_CODE

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
