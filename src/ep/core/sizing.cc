// Row sizes and buffer size hints (docs/ep.md, "Buffer sizes").
#include <algorithm>

#include "core/rows.h"
#include "core/status.h"

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API size_t tshmem_ep_dispatch_row_bytes(int64_t hidden, tshmem_ep_dtype_t x_dtype, int64_t num_topk) {
  const bool fp8 = x_dtype == TSHMEM_EP_FLOAT8_E4M3;
  if (x_dtype != TSHMEM_EP_BFLOAT16 && !fp8) return 0;
  if (hidden < 1 || (fp8 && hidden % TSHMEM_EP_FP8_BLOCK != 0) || (!fp8 && hidden % 8 != 0)) return 0;
  if (num_topk < 0 || num_topk > TSHMEM_EP_MAX_TOPK) return 0;
  return dispatch_row(hidden, fp8 ? 1 : 2, fp8, num_topk).stride;
}

TSHMEM_EP_API size_t tshmem_ep_combine_row_bytes(int64_t hidden, int64_t num_topk) {
  if (hidden < 1 || hidden % 8 != 0 || num_topk < 0 || num_topk > TSHMEM_EP_MAX_TOPK) return 0;
  return combine_row(hidden, num_topk).stride;
}

TSHMEM_EP_API tshmem_ep_status_t tshmem_ep_buffer_size_hint(int n_pes, int64_t max_tokens_per_pe, int64_t hidden,
                                                            tshmem_ep_dtype_t x_dtype, int64_t num_topk,
                                                            size_t *num_nvl_bytes, size_t *num_rdma_bytes) {
  return guarded("tshmem_ep_buffer_size_hint", [&]() -> Status {
    if (n_pes < 1 || n_pes > TSHMEM_EP_MAX_PES)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "n_pes = %d; must be in [1, %d]", n_pes, TSHMEM_EP_MAX_PES);
    if (max_tokens_per_pe < 0)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "max_tokens_per_pe = %lld; must be >= 0",
                  static_cast<long long>(max_tokens_per_pe));
    if (!num_nvl_bytes || !num_rdma_bytes)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT, "num_nvl_bytes / num_rdma_bytes = NULL; both are required");
    const size_t d = tshmem_ep_dispatch_row_bytes(hidden, x_dtype, num_topk);
    const size_t c = tshmem_ep_combine_row_bytes(hidden, num_topk);
    if (d == 0 || c == 0)
      return fail(TSHMEM_EP_ERR_INVALID_ARGUMENT,
                  "hidden = %lld, x_dtype = %d, num_topk = %lld; break the rules of tshmem_ep_dispatch",
                  static_cast<long long>(hidden), static_cast<int>(x_dtype), static_cast<long long>(num_topk));
    const size_t rows = static_cast<size_t>(max_tokens_per_pe) * static_cast<size_t>(n_pes);
    // Receive area: every token of every PE (dispatch), every token of mine back from every PE (combine).
    *num_nvl_bytes = std::max<size_t>(16, rows * std::max(d, c));
    // Staging: my tokens once (dispatch), the rows I received (combine).
    *num_rdma_bytes = std::max(static_cast<size_t>(max_tokens_per_pe) * d, rows * c);
    return kSuccess;
  });
}

}  // extern "C"
