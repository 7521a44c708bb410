// tshmem_ep's CUDA errors as statuses.
#include "core/status.h"

namespace tshmem_ep {

Status cuda_fail(cudaError_t err, const char *what) {
  const Status s = err == cudaErrorMemoryAllocation ? TSHMEM_EP_ERR_OUT_OF_MEMORY : TSHMEM_EP_ERR_CUDA;
  return fail(s, "%s failed: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

}  // namespace tshmem_ep
