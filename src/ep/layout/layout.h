// The dispatch layout (DeepEP's get_dispatch_layout): from topk_idx, the token counts per PE, node and expert and
// which PEs each token goes to. The CPU reference defines the semantics; the kernel computes the same.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/device_error.h"
#include "core/status.h"

namespace tshmem_ep {

struct LayoutRef {
  std::vector<int32_t> per_rank;    // [n_pes]
  std::vector<int32_t> per_node;    // [n_pes / pes_per_node]
  std::vector<int32_t> per_expert;  // [num_experts]
  std::vector<uint8_t> in_rank;     // [num_tokens, n_pes], 0/1
};

/// CPU reference. An entry outside [-1, num_experts) is INVALID_VALUE naming its value and flat position.
Status reference_layout(const int64_t *topk_idx, int64_t num_tokens, int64_t num_topk, int64_t num_experts, int n_pes,
                        int pes_per_node, LayoutRef *out);

/// The kernel (layout_kernels.cu): zeroes the outputs and fills them; a bad entry counts as -1 and is recorded.
cudaError_t launch_layout(const int64_t *topk_idx, int64_t num_tokens, int num_topk, int64_t num_experts, int n_pes,
                          int pes_per_node, int32_t *per_rank, int32_t *per_node, int32_t *per_expert, bool *in_rank,
                          DeviceError *err, cudaStream_t stream);

}  // namespace tshmem_ep
