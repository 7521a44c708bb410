// CPU references of low-latency mode (docs/ep.md, "Low-latency mode"): what every PE's outputs must be, bit for
// bit, for a whole job given every PE's inputs. The GPU tests compare with them.
#pragma once

#include <cstdint>
#include <vector>

namespace tshmem_ep {

/// DeepEP's fp8 cast of one row: per 128 channels amax = max(1e-4, max |x|), scale_inv = amax / 448 (or, with
/// round_scale, the power of 2 at or above it), values x * (1 / scale_inv) saturated to e4m3 and rounded to
/// nearest even. out: hidden bytes; scales: hidden / 128 scale_inv values.
void ll_quantize_row_reference(const uint16_t *x_bf16, int hidden, bool round_scale, uint8_t *out, float *scales);
/// float -> fp8 e4m3 (finite, saturating, round to nearest even) as the GPU's cvt.rn.satfinite does it.
uint8_t fp8_e4m3_from_float(float v);
uint16_t bf16_from_float(float v);  // round to nearest even
float float_from_bf16(uint16_t b);

/// One PE's inputs and (for the combine) its experts' outputs.
struct LlPeInput {
  std::vector<uint16_t> x;          // [T, hidden] bf16
  std::vector<int64_t> topk_idx;    // [T, K]
  std::vector<float> topk_weights;  // [T, K]
  int num_tokens = 0;
  std::vector<uint8_t> masked;  // [N]: PEs this PE has masked
};

/// One PE's dispatch outputs, in the packed layouts of tshmem_ep_ll_dispatch_args_t.
struct LlDispatchOut {
  std::vector<uint8_t> recv_x;        // [L, N*M, hidden * elem]; rows past the counts are not compared
  std::vector<uint8_t> recv_scales;   // fp32 [L][S][N*M] or packed ue8m0 int32 [L][S/4][N*M]
  std::vector<int32_t> recv_count;    // [L]
  std::vector<int32_t> src_info;      // [L, N*M]
  std::vector<int64_t> layout_range;  // [L, N]
};

struct LlShape {
  int n_pes, num_experts, max_tokens, hidden, num_topk;
  bool fp8, round_scale, ue8m0;
};

std::vector<LlDispatchOut> ll_dispatch_reference(const LlShape &s, const std::vector<LlPeInput> &in);
/// y[p]: PE p's expert outputs [L, N*M, hidden] bf16. Returns each PE's combined_x [T, hidden] bf16.
std::vector<std::vector<uint16_t>> ll_combine_reference(const LlShape &s, const std::vector<LlPeInput> &in,
                                                        const std::vector<LlDispatchOut> &d,
                                                        const std::vector<std::vector<uint16_t>> &y);

}  // namespace tshmem_ep
