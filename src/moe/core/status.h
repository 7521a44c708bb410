// tshmem_moe's error mechanism, shared by every family: its status codes over the plumbing the sublibraries share
// (sublib_error.h). It is not tshmem's (src/common/error.h): tshmem_moe has its own public status codes and
// messages and never links libtshmem (docs/moe.md, "Layout"). Host code only.
#pragma once

#include <cstdint>

#include "sublib_error.h"
#include "tshmem/moe.h"

namespace tshmem_moe {

using Status = tshmem_moe_status_t;
using Tensor = tshmem_moe_tensor_t;
constexpr Status kSuccess = TSHMEM_MOE_SUCCESS;
#define MOE_TRY(expr) TSHMEM_SUBLIB_TRY(::tshmem_moe::Status, expr)

// Records `status` and "<current call>: <text>" as this thread's last error; returns `status`. The public calls
// run inside guarded(call, body), which names the call and turns exceptions into statuses.
using tshmem_sublib::fail;
using tshmem_sublib::guarded;
using CallScope = tshmem_sublib::CallScope<Status>;

// Maps a CUDA error to a status (OOM, no device, CUDA) with a message naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
#define MOE_CUDA(expr) TSHMEM_SUBLIB_CUDA(::tshmem_moe::cuda_fail, expr)
// A value of a tensor that breaks a rule, as the CPU references report it: INVALID_VALUE with
// "tensor '<tensor>' holds <value> at flat position <pos>; <rule>".
Status range_error(const char *tensor, int64_t value, int64_t pos, const char *rule);

inline int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }
inline int64_t align_up(int64_t x, int64_t a) { return ceil_div(x, a) * a; }

}  // namespace tshmem_moe

// The codes sublib_error.h returns, and the call it names before any public call is.
template <>
struct tshmem_sublib::ErrorTraits<tshmem_moe_status_t>
    : StatusCodes<tshmem_moe_status_t, TSHMEM_MOE_SUCCESS, TSHMEM_MOE_ERR_OUT_OF_MEMORY, TSHMEM_MOE_ERR_INTERNAL> {
  static constexpr const char *kName = "tshmem_moe";
};
