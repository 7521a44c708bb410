// How one token row is laid out in the buffer, for the host (sizes, checks, references) and the kernels alike.
// Every part starts on a 16-byte boundary, so the kernels move x with 16-byte vector accesses and the row stride
// keeps every row aligned.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define TSHMEM_EP_HD __host__ __device__ __forceinline__
#else
#define TSHMEM_EP_HD inline
#endif

namespace tshmem_ep {

TSHMEM_EP_HD size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }
TSHMEM_EP_HD int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// A dispatched row: x, fp8 scales, top-k ids (int64), top-k weights (fp32), the token's index on its source PE.
struct DispatchRow {
  size_t x_bytes, scales_off, scales_bytes, idx_off, idx_bytes, weights_off, weights_bytes, src_off, stride;
};

/// `elem_size`: 2 (bf16) or 1 (fp8, then hidden / 128 scales); num_topk 0 when ids and weights are not sent.
TSHMEM_EP_HD DispatchRow dispatch_row(int64_t hidden, size_t elem_size, bool fp8, int64_t num_topk) {
  DispatchRow r{};
  r.x_bytes = static_cast<size_t>(hidden) * elem_size;
  r.scales_off = align16(r.x_bytes);
  r.scales_bytes = fp8 ? static_cast<size_t>(hidden / 128) * sizeof(float) : 0;
  r.idx_off = r.scales_off + align16(r.scales_bytes);
  r.idx_bytes = static_cast<size_t>(num_topk) * sizeof(int64_t);
  r.weights_off = r.idx_off + align16(r.idx_bytes);
  r.weights_bytes = static_cast<size_t>(num_topk) * sizeof(float);
  r.src_off = r.weights_off + align16(r.weights_bytes);
  r.stride = r.src_off + 16;
  return r;
}

/// A combined row: x (bf16) and the top-k weights (fp32; num_topk 0 when not sent).
struct CombineRow {
  size_t x_bytes, weights_off, weights_bytes, stride;
};

TSHMEM_EP_HD CombineRow combine_row(int64_t hidden, int64_t num_topk) {
  CombineRow r{};
  r.x_bytes = static_cast<size_t>(hidden) * 2;
  r.weights_off = align16(r.x_bytes);
  r.weights_bytes = static_cast<size_t>(num_topk) * sizeof(float);
  r.stride = r.weights_off + align16(r.weights_bytes);
  return r;
}

/// The words one PE publishes in the notify step (int32): tokens per destination PE [n_pes], tokens per expert
/// [num_experts], then kPublishTail words: a value-error flag, the PE's token count, two spare words.
constexpr int kPublishTail = 4;
TSHMEM_EP_HD int64_t publish_words(int n_pes, int64_t num_experts) { return n_pes + num_experts + kPublishTail; }
TSHMEM_EP_HD int64_t publish_error_word(int n_pes, int64_t num_experts) { return n_pes + num_experts; }
TSHMEM_EP_HD int64_t publish_tokens_word(int n_pes, int64_t num_experts) { return n_pes + num_experts + 1; }

/// The routes of one notify, as int32 words (the handle's "info", on the device and mirrored in pinned memory):
///   [0]                     rows this PE receives
///   [1, 1 + L)              per local expert: received top-k entries, aligned up to expert_alignment
///   recv_offset [N + 1]     where the rows from source PE s start among the received rows (prefix over s)
///   dst_offset [N]          where this PE's rows start among PE p's received rows
///   home_offset [N + 1]     where the rows returned by PE p start in this PE's combine area (prefix over p)
///   comb_dst_offset [N]     where this PE's returned rows start in source PE s's combine area
///   status [4]              0, or the first PE whose published error flag was set, + 1; overflow flag; spare
struct InfoLayout {
  int64_t local_experts, recv_offset, dst_offset, home_offset, comb_dst_offset, status, words;
};
TSHMEM_EP_HD InfoLayout info_layout(int n_pes, int64_t local_experts) {
  InfoLayout l{};
  l.local_experts = local_experts;
  l.recv_offset = 1 + local_experts;
  l.dst_offset = l.recv_offset + n_pes + 1;
  l.home_offset = l.dst_offset + n_pes;
  l.comb_dst_offset = l.home_offset + n_pes + 1;
  l.status = l.comb_dst_offset + n_pes;
  l.words = l.status + 4;
  return l;
}

}  // namespace tshmem_ep
