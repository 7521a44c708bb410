// CPU reference of dispatch: an all-to-all-v over the layout, for a whole job simulated in one process. It
// defines what every PE receives, bit for bit: the rows in (source PE, source token) order, the ids in the
// receiver's local numbering (-1 elsewhere), the weights (0 where the id is -1), the per-expert counts.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace tshmem_ep {

/// One PE's tokens.
struct PeTokens {
  int64_t num_tokens = 0;
  std::vector<uint8_t> x;           // [num_tokens, hidden * elem_size] bytes
  std::vector<float> scales;        // [num_tokens, hidden / 128] (fp8), else empty
  std::vector<int64_t> topk_idx;    // [num_tokens, num_topk]
  std::vector<float> topk_weights;  // [num_tokens, num_topk]
};

/// What one PE receives.
struct PeReceived {
  int64_t num_recv = 0;
  std::vector<uint8_t> x;           // [num_recv, hidden * elem_size]
  std::vector<float> scales;        // [num_recv, hidden / 128] (fp8)
  std::vector<int64_t> topk_idx;    // [num_recv, num_topk], local numbering
  std::vector<float> topk_weights;  // [num_recv, num_topk]
  std::vector<int32_t> src_pe;      // [num_recv]
  std::vector<int32_t> src_idx;     // [num_recv]
  std::vector<int32_t> per_expert;  // [num_experts / n_pes], aligned up to expert_alignment
};

/// `world[p]` is PE p's input; x_elem_size 2 (bf16) or 1 (fp8 with scales). Routes come from the layout of each
/// PE's topk_idx (reference_layout), so an id out of range is INVALID_VALUE.
Status reference_dispatch(const std::vector<PeTokens> &world, int64_t hidden, size_t x_elem_size, bool fp8,
                          int64_t num_topk, int64_t num_experts, int64_t expert_alignment,
                          std::vector<PeReceived> *out);

/// bf16 <-> fp32 as the GPU does them: bf16 -> fp32 exact, fp32 -> bf16 rounds to nearest even (NaN stays NaN).
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

}  // namespace tshmem_ep
