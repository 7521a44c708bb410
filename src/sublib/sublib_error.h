// The error plumbing the sublibraries (tshmem_moe, tshmem_ep) share, header-only, so that neither depends on the
// other nor on libtshmem: the thread-local last error, the name of the public call for messages, and the
// exception edge of the C API. Messages read "<call>: <text>" ("<argument> = <value>; <rule>"), as libtshmem's do.
// Everything is keyed by the sublibrary's C status enum, whose specialisation of ErrorTraits gives its codes and
// name; each sublibrary has its own state. Host code only; includes standard headers only.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <utility>

namespace tshmem_sublib {

/// Specialised by each sublibrary for its status enum, deriving from StatusCodes and adding kName (the call named
/// before any public call is).
template <class Status>
struct ErrorTraits;

/// The codes the plumbing itself returns.
template <class Status, Status success, Status out_of_memory, Status internal>
struct StatusCodes {
  static constexpr Status kSuccess = success;
  static constexpr Status kOutOfMemory = out_of_memory;
  static constexpr Status kInternal = internal;
};

/// This thread's last error and current call, one pair per sublibrary.
template <class Status>
struct ErrorState {
  static thread_local char text[1024];
  static thread_local const char *call;
};
template <class Status>
thread_local char ErrorState<Status>::text[1024] = "";
template <class Status>
thread_local const char *ErrorState<Status>::call = ErrorTraits<Status>::kName;

/// Records `status` and "<current call>: <text>" as this thread's last error; returns `status`.
template <class Status>
Status fail(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
template <class Status>
Status fail(Status status, const char *fmt, ...) {
  char *text = ErrorState<Status>::text;
  const size_t size = sizeof ErrorState<Status>::text;
  int n = std::snprintf(text, size, "%s: ", ErrorState<Status>::call);
  if (n < 0 || n >= static_cast<int>(size)) n = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text + n, size - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  return status;
}

/// Names the public call for the messages of everything below it on this thread.
template <class Status>
class CallScope {
 public:
  explicit CallScope(const char *name) : prev_(ErrorState<Status>::call) { ErrorState<Status>::call = name; }
  ~CallScope() { ErrorState<Status>::call = prev_; }
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;

 private:
  const char *prev_;
};

/// This thread's last error ("" if none).
template <class Status>
const char *last_error() {
  return ErrorState<Status>::text;
}

/// The edge of every extern "C" function: names the call, and turns exceptions into statuses (the status type is
/// the body's return type).
template <class F, class Status = decltype(std::declval<F &>()())>
Status guarded(const char *call, F &&body) {
  using T = ErrorTraits<Status>;
  CallScope<Status> scope(call);
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(T::kOutOfMemory, "host allocation failed");
  } catch (const std::exception &e) {
    return fail(T::kInternal, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail(T::kInternal, "unexpected exception");
  }
}

}  // namespace tshmem_sublib

/// `return` the status of `expr` unless it is success (inside a function returning the same status).
#define TSHMEM_SUBLIB_TRY(Status, expr)                                                \
  do {                                                                                 \
    Status sublib_s_ = (expr);                                                         \
    if (sublib_s_ != ::tshmem_sublib::ErrorTraits<Status>::kSuccess) return sublib_s_; \
  } while (0)

/// `return on_error(err, "expr")` when the CUDA call `expr` fails (expanded where the CUDA runtime is included).
#define TSHMEM_SUBLIB_CUDA(on_error, expr)                           \
  do {                                                               \
    cudaError_t sublib_e_ = (expr);                                  \
    if (sublib_e_ != cudaSuccess) return on_error(sublib_e_, #expr); \
  } while (0)
