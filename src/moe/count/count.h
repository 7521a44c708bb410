// The count family (docs/moe.md, "Counting"): group_count and aux_fi, histograms over every slot of every token.
// Each entry point's problem is a plain struct of pointers and sizes, validated by count_api.cc; its CPU reference
// and its CUDA launcher take the same struct.
#pragma once

#include <cstdint>

#include "core/launch.h"
#include "core/status.h"

namespace tshmem_moe {

struct GroupCountArgs {
  const int64_t *idx;
  int64_t n;  // T * K
  int64_t G;
  int32_t *counts;
};

struct AuxFiArgs {
  const int64_t *idx;
  int64_t T, K, E, num_aux_topk;
  float *fi;
};

// CPU references (count_reference.cc): the semantics of docs/moe.md, bit-exact where it says bitwise. A value
// violation returns INVALID_VALUE naming the tensor, the value, its flat position and the rule.
Status ref_group_count(const GroupCountArgs &a);
Status ref_aux_fi(const AuxFiArgs &a);

// CUDA launchers (count_kernels.cu): enqueue on c.stream; value violations go to c.err.
Status launch_group_count(const GroupCountArgs &a, const LaunchCtx &c);
Status launch_aux_fi(const AuxFiArgs &a, const LaunchCtx &c);

}  // namespace tshmem_moe
