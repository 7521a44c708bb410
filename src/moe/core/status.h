// The sublibrary's own error mechanism, shared by every family: status plumbing, the thread-local last error
// and the exception edge of the C API. It is not tshmem's (src/common/error.h): tshmem_moe has its own public
// status codes and messages and never links libtshmem (docs/moe.md, "Layout"). Host code only.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <exception>
#include <new>

#include "tshmem/moe.h"

namespace tshmem_moe {

using Status = tshmem_moe_status_t;
using Tensor = tshmem_moe_tensor_t;
constexpr Status kSuccess = TSHMEM_MOE_SUCCESS;

// Records `status` and a message "<current call>: <text>" as this thread's last error; returns `status`.
Status fail(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Maps a CUDA error to a status (OOM, no device, CUDA) with a message naming the failed expression.
Status cuda_fail(cudaError_t err, const char *what);
// A value of a tensor that breaks a rule, as the CPU references report it: INVALID_VALUE with
// "tensor '<tensor>' holds <value> at flat position <pos>; <rule>".
Status range_error(const char *tensor, int64_t value, int64_t pos, const char *rule);
const char *current_call();

// Names the public call for the messages of everything below it on this thread.
class CallScope {
 public:
  explicit CallScope(const char *name);
  ~CallScope();
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;

 private:
  const char *prev_;
};

#define MOE_TRY(expr)                                    \
  do {                                                   \
    ::tshmem_moe::Status moe_s_ = (expr);                \
    if (moe_s_ != ::tshmem_moe::kSuccess) return moe_s_; \
  } while (0)

#define MOE_CUDA(expr)                                                        \
  do {                                                                        \
    cudaError_t moe_e_ = (expr);                                              \
    if (moe_e_ != cudaSuccess) return ::tshmem_moe::cuda_fail(moe_e_, #expr); \
  } while (0)

// The edge of every extern "C" function: names the call, and turns exceptions into statuses.
template <class F>
Status guarded(const char *call, F &&body) {
  CallScope scope(call);
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TSHMEM_MOE_ERR_OUT_OF_MEMORY, "host allocation failed");
  } catch (const std::exception &e) {
    return fail(TSHMEM_MOE_ERR_INTERNAL, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail(TSHMEM_MOE_ERR_INTERNAL, "unexpected exception");
  }
}

inline int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }
inline int64_t align_up(int64_t x, int64_t a) { return ceil_div(x, a) * a; }

}  // namespace tshmem_moe
