// The reduce family (docs/moe.md, "Reduction"): reduce_fused. Its problem is a plain struct of pointers and
// sizes, validated by reduce_api.cc; its CPU reference and its CUDA launcher take the same struct.
#pragma once

#include <cstdint>

#include "core/launch.h"
#include "core/status.h"

namespace tshmem_moe {

struct ReduceArgs {
  const void *x;  // [P, H] fp32 or bf16
  bool x_bf16;
  int64_t P, H;
  const float *x_sf;   // [P] or NULL
  const float *w;      // [T, K] or NULL
  const int32_t *pos;  // [T, K]
  int64_t T, K;
  const float *sf;  // [1] or NULL
  tshmem_moe_dtype_t out_dtype;
  void *out;
};

// CPU references (reduce_reference.cc): the semantics of docs/moe.md, bit-exact where it says bitwise. A value
// violation returns INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_reduce_fused(const ReduceArgs &a);

// CUDA launchers (reduce_kernels.cu): enqueue on c.stream; value violations go to c.err.
Status launch_reduce_fused(const ReduceArgs &a, const LaunchCtx &c);

}  // namespace tshmem_moe
