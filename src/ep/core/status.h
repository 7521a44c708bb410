// tshmem_ep's error mechanism: its status codes over the sublibraries' shared plumbing (sublib_error.h: the
// thread-local last error, the name of the public call for messages, the exception edge of the C API). Messages
// read "<call>: <argument> = <value>; <rule>", as libtshmem's and tshmem_moe's do. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include "sublib_error.h"
#include "tshmem/ep.h"

template <>
struct tshmem_sublib::ErrorTraits<tshmem_ep_status_t>
    : StatusCodes<tshmem_ep_status_t, TSHMEM_EP_SUCCESS, TSHMEM_EP_ERR_OUT_OF_MEMORY, TSHMEM_EP_ERR_INTERNAL> {
  static constexpr const char *kName = "tshmem_ep";
};

namespace tshmem_ep {

using Status = tshmem_ep_status_t;
constexpr Status kSuccess = TSHMEM_EP_SUCCESS;
// fail(status, fmt, ...) records the last error; guarded(call, body) is the edge of every extern "C" function.
using tshmem_sublib::fail;
using tshmem_sublib::guarded;
using CallScope = tshmem_sublib::CallScope<Status>;
inline const char *last_error() { return tshmem_sublib::last_error<Status>(); }

/// A CUDA error as a status (OUT_OF_MEMORY for allocations, else CUDA) naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
#define EP_CUDA(expr) TSHMEM_SUBLIB_CUDA(::tshmem_ep::cuda_fail, expr)
#define EP_TRY(expr) TSHMEM_SUBLIB_TRY(::tshmem_ep::Status, expr)

}  // namespace tshmem_ep
