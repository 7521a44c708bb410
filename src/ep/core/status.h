// tshmem_ep's error mechanism: its status codes over the sublibraries' shared plumbing (sublib_error.h: the
// thread-local last error, the name of the public call for messages, the exception edge of the C API). Messages
// read "<call>: <argument> = <value>; <rule>", as libtshmem's and tshmem_moe's do. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "sublib_error.h"
#include "tshmem/ep.h"

template <>
struct tshmem_sublib::ErrorTraits<tshmem_ep_status_t> {
  static constexpr tshmem_ep_status_t kSuccess = TSHMEM_EP_SUCCESS;
  static constexpr tshmem_ep_status_t kOutOfMemory = TSHMEM_EP_ERR_OUT_OF_MEMORY;
  static constexpr tshmem_ep_status_t kInternal = TSHMEM_EP_ERR_INTERNAL;
  static constexpr const char *kName = "tshmem_ep";
};

namespace tshmem_ep {

using Status = tshmem_ep_status_t;
constexpr Status kSuccess = TSHMEM_EP_SUCCESS;

/// fail(status, fmt, ...): records `status` and "<current call>: <text>" as this thread's last error; returns it.
using tshmem_sublib::fail;
/// Names the public call for the messages of everything below it on this thread.
using CallScope = tshmem_sublib::CallScope<Status>;
/// A CUDA error as a status (OUT_OF_MEMORY for allocations, else CUDA) naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
/// The last error's text on this thread ("" if none).
inline const char *last_error() { return tshmem_sublib::ErrorState<Status>::text; }
inline const char *current_call() { return tshmem_sublib::ErrorState<Status>::call; }

/// The edge of every extern "C" function: names the call, and turns exceptions into statuses.
template <class F>
Status guarded(const char *call, F &&body) {
  return tshmem_sublib::guarded<Status>(call, std::forward<F>(body));
}

#define EP_TRY(expr) TSHMEM_SUBLIB_TRY(::tshmem_ep::Status, expr)
#define EP_CUDA(expr) TSHMEM_SUBLIB_CUDA(::tshmem_ep::cuda_fail, expr)

}  // namespace tshmem_ep
