// The rowwise family (docs/moe.md, "Row-wise transforms of a top-k result"): normalize_weight, mask_indices_by_tp
// and inplace_unique_group_indices, each transforming every token's row on its own. Each entry point's problem is
// a plain struct of pointers and sizes, validated by rowwise_api.cc; its CPU reference and its CUDA launcher take
// the same struct.
#pragma once

#include <cstdint>

#include "core/launch.h"
#include "core/status.h"

namespace tshmem_moe {

struct NormalizeArgs {
  const float *w;
  int64_t T, K;
  float *den;
  float *out;
};

struct MaskTpArgs {
  const void *in;
  void *out;
  bool is64;
  int64_t numel, n, num_ep_ranks, tp_rank, num_tp_ranks;
};

struct UniqueArgs {
  int64_t *idx;
  int64_t T, K, num_groups;
};

// CPU references (rowwise_reference.cc): the semantics of docs/moe.md, bit-exact where it says bitwise. A value
// violation returns INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_normalize_weight(const NormalizeArgs &a);
Status ref_mask_indices_by_tp(const MaskTpArgs &a);
Status ref_unique(const UniqueArgs &a);

// CUDA launchers (rowwise_kernels.cu): enqueue on c.stream; value violations go to c.err.
Status launch_normalize_weight(const NormalizeArgs &a, const LaunchCtx &c);
Status launch_mask_indices_by_tp(const MaskTpArgs &a, const LaunchCtx &c);
Status launch_unique(const UniqueArgs &a, const LaunchCtx &c);

}  // namespace tshmem_moe
