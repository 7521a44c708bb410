// The sublibrary's error mechanism: the thread-local last error, the name of the public call for messages, and
// the exception edge of the C API. Messages read "<call>: <argument> = <value>; <rule>", as libtshmem's and
// tshmem_moe's do. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <new>

#include "tshmem/ep.h"

namespace tshmem_ep {

using Status = tshmem_ep_status_t;
constexpr Status kSuccess = TSHMEM_EP_SUCCESS;

/// Records `status` and "<current call>: <text>" as this thread's last error; returns `status`.
Status fail(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/// A CUDA error as a status (OUT_OF_MEMORY for allocations, else CUDA) naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
/// The last error's text on this thread ("" if none).
const char *last_error();
const char *current_call();

/// Names the public call for the messages of everything below it on this thread.
class CallScope {
 public:
  explicit CallScope(const char *name);
  ~CallScope();
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;

 private:
  const char *prev_;
};

#define EP_TRY(expr)                                  \
  do {                                                \
    ::tshmem_ep::Status ep_s_ = (expr);               \
    if (ep_s_ != ::tshmem_ep::kSuccess) return ep_s_; \
  } while (0)

#define EP_CUDA(expr)                                                      \
  do {                                                                     \
    cudaError_t ep_e_ = (expr);                                            \
    if (ep_e_ != cudaSuccess) return ::tshmem_ep::cuda_fail(ep_e_, #expr); \
  } while (0)

/// The edge of every extern "C" function: names the call, and turns exceptions into statuses.
template <class F>
Status guarded(const char *call, F &&body) {
  CallScope scope(call);
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TSHMEM_EP_ERR_OUT_OF_MEMORY, "host allocation failed");
  } catch (const std::exception &e) {
    return fail(TSHMEM_EP_ERR_INTERNAL, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail(TSHMEM_EP_ERR_INTERNAL, "unexpected exception");
  }
}

}  // namespace tshmem_ep
