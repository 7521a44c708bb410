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
