// Status strings, CUDA errors and value errors of tshmem_moe (its own small mechanism over sublib_error.h: this
// library does not depend on libtshmem).
#include "core/status.h"

namespace tshmem_moe {

Status cuda_fail(cudaError_t err, const char *what) {
  Status s = TSHMEM_MOE_ERR_CUDA;
  if (err == cudaErrorMemoryAllocation) s = TSHMEM_MOE_ERR_OUT_OF_MEMORY;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInvalidDevice)
    s = TSHMEM_MOE_ERR_NO_DEVICE;
  return fail(s, "%s failed: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

Status range_error(const char *tensor, int64_t value, int64_t pos, const char *rule) {
  return fail(TSHMEM_MOE_ERR_INVALID_VALUE, "tensor '%s' holds %lld at flat position %lld; %s", tensor,
              static_cast<long long>(value), static_cast<long long>(pos), rule);
}

}  // namespace tshmem_moe

extern "C" {

// A switch with no default: -Wswitch flags a new status without a string.
TSHMEM_MOE_API const char *tshmem_moe_status_string(tshmem_moe_status_t status) {
  switch (status) {
    case TSHMEM_MOE_SUCCESS: return "TSHMEM_MOE_SUCCESS";
    case TSHMEM_MOE_ERR_INVALID_ARGUMENT: return "TSHMEM_MOE_ERR_INVALID_ARGUMENT";
    case TSHMEM_MOE_ERR_DEVICE_MISMATCH: return "TSHMEM_MOE_ERR_DEVICE_MISMATCH";
    case TSHMEM_MOE_ERR_INVALID_VALUE: return "TSHMEM_MOE_ERR_INVALID_VALUE";
    case TSHMEM_MOE_ERR_UNSUPPORTED: return "TSHMEM_MOE_ERR_UNSUPPORTED";
    case TSHMEM_MOE_ERR_NO_DEVICE: return "TSHMEM_MOE_ERR_NO_DEVICE";
    case TSHMEM_MOE_ERR_OUT_OF_MEMORY: return "TSHMEM_MOE_ERR_OUT_OF_MEMORY";
    case TSHMEM_MOE_ERR_CUDA: return "TSHMEM_MOE_ERR_CUDA";
    case TSHMEM_MOE_ERR_INTERNAL: return "TSHMEM_MOE_ERR_INTERNAL";
    case TSHMEM_MOE_NUM_STATUS: break;
  }
  return "unknown tshmem_moe status";
}

TSHMEM_MOE_API const char *tshmem_moe_last_error(void) { return tshmem_sublib::last_error<tshmem_moe_status_t>(); }

}  // extern "C"
