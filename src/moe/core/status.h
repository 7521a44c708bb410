// tshmem_moe's error mechanism, shared by every family: its status codes over the sublibraries' shared plumbing
// (sublib_error.h: the thread-local last error, the name of the public call, the exception edge of the C API). It
// is not tshmem's (src/common/error.h): tshmem_moe has its own public status codes and messages and never links
// libtshmem (docs/moe.md, "Layout"). Host code only.
#pragma once

#include <cstdint>
#include <utility>

#include "sublib_error.h"
#include "tshmem/moe.h"

template <>
struct tshmem_sublib::ErrorTraits<tshmem_moe_status_t> {
  static constexpr tshmem_moe_status_t kSuccess = TSHMEM_MOE_SUCCESS;
  static constexpr tshmem_moe_status_t kOutOfMemory = TSHMEM_MOE_ERR_OUT_OF_MEMORY;
  static constexpr tshmem_moe_status_t kInternal = TSHMEM_MOE_ERR_INTERNAL;
  static constexpr const char *kName = "tshmem_moe";
};

namespace tshmem_moe {

using Status = tshmem_moe_status_t;
using Tensor = tshmem_moe_tensor_t;
constexpr Status kSuccess = TSHMEM_MOE_SUCCESS;

// fail(status, fmt, ...): records `status` and "<current call>: <text>" as this thread's last error; returns it.
using tshmem_sublib::fail;
// Names the public call for the messages of everything below it on this thread.
using CallScope = tshmem_sublib::CallScope<Status>;
// Maps a CUDA error to a status (OOM, no device, CUDA) with a message naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
// A value of a tensor that breaks a rule, as the CPU references report it: INVALID_VALUE with
// "tensor '<tensor>' holds <value> at flat position <pos>; <rule>".
Status range_error(const char *tensor, int64_t value, int64_t pos, const char *rule);
inline const char *current_call() { return tshmem_sublib::ErrorState<Status>::call; }

// The edge of every extern "C" function: names the call, and turns exceptions into statuses.
template <class F>
Status guarded(const char *call, F &&body) {
  return tshmem_sublib::guarded<Status>(call, std::forward<F>(body));
}

#define MOE_TRY(expr) TSHMEM_SUBLIB_TRY(::tshmem_moe::Status, expr)
#define MOE_CUDA(expr) TSHMEM_SUBLIB_CUDA(::tshmem_moe::cuda_fail, expr)

inline int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }
inline int64_t align_up(int64_t x, int64_t a) { return ceil_div(x, a) * a; }

}  // namespace tshmem_moe
