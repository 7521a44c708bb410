// One place formats errors: the thread's last error, status propagation and the logger.
#pragma once

#include <cstdarg>
#include <string>

#include "tshmem/tshmem.h"

namespace tshmemi {

using Status = tshmem_status_t;

/// Records `status` and a printf-formatted message as the calling thread's last error and returns
/// `status`, so that a failing path reads `return set_error(TSHMEM_ERR_..., "call: value ... rule")`.
/// The message is kept as given (collective errors are identical on every PE); the log line adds the PE.
Status set_error(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/// Same as set_error but takes a ready message (e.g. one every PE agreed on).
Status set_error_message(Status status, const std::string &message);

/// The calling thread's last error.
Status last_error_code();
const std::string &last_error_message();
void clear_last_error();

/// The status of the exception being handled, recorded as the last error naming `call`:
/// TSHMEM_ERR_OUT_OF_MEMORY for std::bad_alloc, TSHMEM_ERR_INTERNAL for anything else. Call it only inside a
/// catch block (it rethrows the current exception to classify it).
Status current_exception_status(const char *call);

/// Runs the body of an extern "C" function so that no exception crosses the C boundary: after one, the
/// error is recorded and `on_exception` returned.
template <typename F>
auto guarded(const char *call, F &&body, decltype(body()) on_exception) -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    current_exception_status(call);
    return on_exception;
  }
}

/// The same for a body that returns a status: an exception becomes its status.
template <typename F>
int guarded_status(const char *call, F &&body) {
  try {
    return body();
  } catch (...) {
    return current_exception_status(call);
  }
}

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

/// On: errors are logged at info level instead of as warnings, because the caller reports each one itself (a
/// binding that raises an exception per failure: tshmemi_errors_reported_by_caller).
void set_errors_reported_by_caller(bool on);

/// Subsystems for TSHMEM_DEBUG_SUBSYS masks.
enum LogSubsys : unsigned {
  kLogInit = 1u << 0,
  kLogBoot = 1u << 1,
  kLogHeap = 1u << 2,
  kLogMem = 1u << 3,
  kLogCuda = 1u << 4,
  kLogTopo = 1u << 5,
  kLogNvls = 1u << 6,
  kLogAll = ~0u,
};

/// Sets what is logged (from the environment at init) and the PE tag every line carries.
void log_configure(LogLevel level, unsigned subsys_mask);
void log_set_pe(int my_pe, int n_pes);

bool log_enabled(LogLevel level, unsigned subsys);
void log_message(LogLevel level, unsigned subsys, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/// Logs `message` unless a message of the same `key` was logged less than a second ago; those are counted, and the
/// next one logged after the pause says how many were left out ("(… 612,587 more like this)"), as does the end of
/// the process (or log_flush_throttled()) for a count still held.
void log_throttled(LogLevel level, unsigned subsys, const std::string &key, const std::string &message);
/// Prints the counts of repeats still held back by log_throttled.
void log_flush_throttled();

/// The "[PE 3/8 host:pid]" tag (or "[PE ?/? host:pid]" before init).
std::string pe_tag();

/// printf into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vformat(const char *fmt, va_list args);

}  // namespace tshmemi

#define TSHMEMI_LOG(level, subsys, ...)                                                   \
  do {                                                                                    \
    if (::tshmemi::log_enabled(::tshmemi::LogLevel::level, ::tshmemi::subsys))            \
      ::tshmemi::log_message(::tshmemi::LogLevel::level, ::tshmemi::subsys, __VA_ARGS__); \
  } while (0)

/// Propagates a failing status unchanged (NCCLCHECK style) and leaves a trace-level breadcrumb.
#define TSHMEM_CHECK(expr)                                                                                \
  do {                                                                                                    \
    ::tshmemi::Status tshmemi_status_ = (expr);                                                           \
    if (tshmemi_status_ != TSHMEM_SUCCESS) {                                                              \
      TSHMEMI_LOG(kTrace, kLogAll, "%s:%d -> %s", __FILE__, __LINE__, tshmemx_strerror(tshmemi_status_)); \
      return tshmemi_status_;                                                                             \
    }                                                                                                     \
  } while (0)
