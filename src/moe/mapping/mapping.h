// The mapping family (docs/moe.md, "The fused layout"): get_fused_mapping, expand_to_fused and
// expand_to_fused_with_sf (one launcher for both expands). Each entry point's problem is a plain struct of
// pointers and sizes, validated by mapping_api.cc; its CPU reference and its CUDA launcher take the same struct.
#pragma once

#include <cstdint>

#include "core/launch.h"
#include "core/status.h"

namespace tshmem_moe {

// Slots (T * K) and rows (P) of get_fused_mapping: int32 positions, with headroom for the kernel's 32-bit
// loop strides (a step never passes INT32_MAX).
constexpr int64_t kMappingIndexLimit = INT32_MAX - 4096;

struct MappingArgs {
  const int64_t *idx;
  int64_t T, K, E, P, alignment;  // P = length of the pos_to_* arrays
  int32_t *pos_to_expert;
  int32_t *pos_to_token;
  int32_t *pos_to_token_topk;
  int32_t *token_topk_to_pos;
  int32_t *expert_start;
  int32_t *expert_end;
  int32_t *num_tokens_per_expert;
  int64_t *total;  // if not NULL: receives sum of aligned counts (device memory on the GPU path)
};

struct ExpandArgs {
  const void *x;
  int64_t T, H, esize;  // element size in bytes
  const int32_t *pos;   // [T, K]
  int64_t K;
  const int32_t *pos_to_expert;  // [P]
  int64_t P;
  void *out;  // [P, H]
  // with sf (x_sf == NULL: plain expand)
  const uint32_t *x_sf;  // [T, hsf] 4-byte words (fp32 or packed int32), row-major
  int64_t hsf;
  bool col_major;  // sf_out element (p, j) at j * P4 + p, else p * hsf + j
  int64_t P4;
  uint32_t *sf_out;
};

// CPU references (mapping_reference.cc): the semantics of docs/moe.md, bit-exact where it says bitwise. A value
// violation returns INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_get_fused_mapping(const MappingArgs &a);
Status ref_expand(const ExpandArgs &a);

// CUDA launchers (mapping_kernels.cu): enqueue on c.stream; value violations go to c.err.
Status launch_get_fused_mapping(const MappingArgs &a, const LaunchCtx &c);
Status launch_expand(const ExpandArgs &a, const LaunchCtx &c);

}  // namespace tshmem_moe
