// The low-latency region's size hint (include/tshmem/ep.h): exported with the other host-only calls.
#include "low_latency/ll.h"

using namespace tshmem_ep;

extern "C" {

TSHMEM_EP_API size_t tshmem_ep_low_latency_rdma_size_hint(int64_t num_max_dispatch_tokens_per_rank, int64_t hidden,
                                                          int n_pes, int64_t num_experts) {
  if (n_pes < 1 || n_pes > TSHMEM_EP_MAX_PES || num_max_dispatch_tokens_per_rank < 1 ||
      num_max_dispatch_tokens_per_rank > (1 << 16) || hidden < 8 || hidden % 8 != 0 || hidden > (1 << 20) ||
      num_experts < 1 || num_experts > TSHMEM_EP_MAX_EXPERTS || num_experts % n_pes != 0)
    return 0;
  return ll_layout(n_pes, num_max_dispatch_tokens_per_rank, hidden, num_experts).total_bytes;
}

}  // extern "C"
