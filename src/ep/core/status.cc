// Status strings and the thread-local last error of tshmem_ep.
#include "core/status.h"

#include <cstdarg>
#include <cstdio>

namespace tshmem_ep {
namespace {
thread_local char t_last_error[1024] = "";
thread_local const char *t_call = "tshmem_ep";
}  // namespace

const char *current_call() { return t_call; }
const char *last_error() { return t_last_error; }

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
  const Status s = err == cudaErrorMemoryAllocation ? TSHMEM_EP_ERR_OUT_OF_MEMORY : TSHMEM_EP_ERR_CUDA;
  return fail(s, "%s failed: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

}  // namespace tshmem_ep

extern "C" {

// A switch with no default: -Wswitch flags a new status without a string.
TSHMEM_EP_API const char *tshmem_ep_status_string(tshmem_ep_status_t status) {
  switch (status) {
    case TSHMEM_EP_SUCCESS: return "TSHMEM_EP_SUCCESS";
    case TSHMEM_EP_ERR_INVALID_ARGUMENT: return "TSHMEM_EP_ERR_INVALID_ARGUMENT";
    case TSHMEM_EP_ERR_INVALID_VALUE: return "TSHMEM_EP_ERR_INVALID_VALUE";
    case TSHMEM_EP_ERR_BUFFER_TOO_SMALL: return "TSHMEM_EP_ERR_BUFFER_TOO_SMALL";
    case TSHMEM_EP_ERR_NOT_INITIALIZED: return "TSHMEM_EP_ERR_NOT_INITIALIZED";
    case TSHMEM_EP_ERR_TSHMEM: return "TSHMEM_EP_ERR_TSHMEM";
    case TSHMEM_EP_ERR_CUDA: return "TSHMEM_EP_ERR_CUDA";
    case TSHMEM_EP_ERR_OUT_OF_MEMORY: return "TSHMEM_EP_ERR_OUT_OF_MEMORY";
    case TSHMEM_EP_ERR_UNSUPPORTED: return "TSHMEM_EP_ERR_UNSUPPORTED";
    case TSHMEM_EP_ERR_INTERNAL: return "TSHMEM_EP_ERR_INTERNAL";
    case TSHMEM_EP_NUM_STATUS: break;
  }
  return "unknown tshmem_ep status";
}

TSHMEM_EP_API const char *tshmem_ep_last_error(void) { return tshmem_ep::last_error(); }

TSHMEM_EP_API size_t tshmem_ep_dtype_size(tshmem_ep_dtype_t dtype) {
  switch (dtype) {
    case TSHMEM_EP_BFLOAT16: return 2;
    case TSHMEM_EP_FLOAT8_E4M3: return 1;
    case TSHMEM_EP_FLOAT32: return 4;
    case TSHMEM_EP_FLOAT16: return 2;
    case TSHMEM_EP_INT64: return 8;
    case TSHMEM_EP_INT32: return 4;
    case TSHMEM_EP_NUM_DTYPES: break;
  }
  return 0;
}

}  // extern "C"
