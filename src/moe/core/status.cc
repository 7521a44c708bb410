// Status strings and the thread-local last error of tshmem_moe (its own small mechanism: this library does
// not depend on libtshmem).
#include "core/status.h"

#include <cstdio>
#include <cstring>

namespace tshmem_moe {
namespace {
thread_local char t_last_error[1024] = "";
thread_local const char *t_call = "tshmem_moe";
}  // namespace

const char *current_call() { return t_call; }

CallScope::CallScope(const char *name) : prev_(t_call) { t_call = name; }
CallScope::~CallScope() { t_call = prev_; }

Status fail(Status status, const char *fmt, ...) {
  int n = std::snprintf(t_last_error, sizeof t_last_error, "%s: ", t_call);
  if (n < 0 || n >= static_cast<int>(sizeof t_last_error)) n = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_last_error + n, sizeof t_last_error - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  return status;
}

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

TSHMEM_MOE_API const char *tshmem_moe_last_error(void) { return tshmem_moe::t_last_error; }

}  // extern "C"
