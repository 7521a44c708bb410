#include "common/error.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>

namespace tshmemi {
namespace {

struct LastError {
  Status code = TSHMEM_SUCCESS;
  std::string message;
};

LastError &last_error() {
  thread_local LastError error;
  return error;
}

// Read by any thread that logs, written by init and finalize (which other threads' calls may race once finalize
// has begun: they find no context and report it): atomics, relaxed (a line's tag may name the PE or not).
struct LogConfig {
  std::atomic<LogLevel> level{LogLevel::kWarn};
  std::atomic<unsigned> subsys_mask{kLogAll};
  std::atomic<int> my_pe{-1};
  std::atomic<int> n_pes{-1};
};

LogConfig &log_config() {
  static LogConfig config;
  return config;
}

const char *level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kNone: return "NONE";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
  }
  return "?";
}

// The repeats log_throttled holds back, by key.
struct Repeats {
  std::chrono::steady_clock::time_point last_logged;
  uint64_t held = 0;
};
struct Throttle {
  std::mutex mutex;
  std::map<std::string, Repeats> by_key;
  ~Throttle() { flush(); }  // the end of the process says what was held back
  void flush();
};

Throttle &throttle() {
  static Throttle t;
  return t;
}

// 612587 -> "612,587".
std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void Throttle::flush() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[key, repeats] : by_key)
    if (repeats.held > 0) {
      log_message(LogLevel::kWarn, kLogAll, "… %s more like this: %s", with_commas(repeats.held).c_str(), key.c_str());
      repeats.held = 0;
    }
}

// The key of an error's log line: its text with every number left out, and its status, so that a call failing in a
// loop (after finalize, on a stopped path: the same words, other tickets or sizes) is one line and a count.
std::string error_key(Status status, const std::string &message) {
  std::string key;
  for (size_t i = 0; i < message.size() && key.size() < 160; ++i) {
    const bool digit = message[i] >= '0' && message[i] <= '9';
    if (!digit)
      key += message[i];
    else if (key.empty() || key.back() != '#')
      key += '#';
  }
  return key + " (" + tshmemx_strerror(status) + ")";
}

}  // namespace

void log_throttled(LogLevel level, unsigned subsys, const std::string &key, const std::string &message) {
  if (!log_enabled(level, subsys)) return;
  constexpr auto kPause = std::chrono::seconds(1);
  const auto now = std::chrono::steady_clock::now();
  uint64_t held = 0;
  {
    Throttle &t = throttle();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (t.by_key.size() > 256 && t.by_key.find(key) == t.by_key.end()) t.by_key.clear();  // bounded memory
    auto [it, fresh] = t.by_key.try_emplace(key);
    Repeats &r = it->second;
    if (!fresh && now - r.last_logged < kPause) {
      ++r.held;
      return;
    }
    held = r.held;
    r.held = 0;
    r.last_logged = now;
  }
  if (held > 0)
    log_message(level, subsys, "%s (… %s more like this)", message.c_str(), with_commas(held).c_str());
  else
    log_message(level, subsys, "%s", message.c_str());
}

void log_flush_throttled() { throttle().flush(); }

std::string vformat(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int needed = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (needed <= 0) return std::string();
  std::string out(static_cast<size_t>(needed) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), fmt, args);
  out.resize(static_cast<size_t>(needed));
  return out;
}

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

std::string pe_tag() {
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  const LogConfig &config = log_config();
  const int my_pe = config.my_pe.load(std::memory_order_relaxed), n_pes = config.n_pes.load(std::memory_order_relaxed);
  if (my_pe < 0) return format("[PE ?/? %s:%d]", host, static_cast<int>(getpid()));
  return format("[PE %d/%d %s:%d]", my_pe, n_pes, host, static_cast<int>(getpid()));
}

Status current_exception_status(const char *call) {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return set_error(TSHMEM_ERR_OUT_OF_MEMORY, "%s: host memory exhausted", call);
  } catch (const std::exception &e) {
    return set_error(TSHMEM_ERR_INTERNAL, "%s: unexpected exception: %s", call, e.what());
  } catch (...) {
    return set_error(TSHMEM_ERR_INTERNAL, "%s: unexpected exception", call);
  }
}

namespace {
// A binding that turns every failure into an exception of its own (tshmem's Python package) reports errors itself:
// they are then logged at info level, not as warnings that repeat what the exception says.
std::atomic<bool> g_caller_reports{false};
}  // namespace

void set_errors_reported_by_caller(bool on) { g_caller_reports.store(on, std::memory_order_relaxed); }

Status set_error_message(Status status, const std::string &message) {
  LastError &error = last_error();
  const bool repeated = error.code == status && error.message == message;  // passed up unchanged: logged once
  error.code = status;
  error.message = message;
  if (repeated) return status;
  if (g_caller_reports.load(std::memory_order_relaxed))
    TSHMEMI_LOG(kInfo, kLogAll, "%s (%s)", message.c_str(), tshmemx_strerror(status));
  else
    log_throttled(LogLevel::kWarn, kLogAll, error_key(status, message),
                  message + " (" + tshmemx_strerror(status) + ")");
  return status;
}

Status set_error(Status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  return set_error_message(status, message);
}

Status last_error_code() { return last_error().code; }
const std::string &last_error_message() { return last_error().message; }
void clear_last_error() {
  last_error().code = TSHMEM_SUCCESS;
  last_error().message.clear();
}

void log_configure(LogLevel level, unsigned subsys_mask) {
  log_config().level.store(level, std::memory_order_relaxed);
  log_config().subsys_mask.store(subsys_mask, std::memory_order_relaxed);
}

void log_set_pe(int my_pe, int n_pes) {
  log_config().my_pe.store(my_pe, std::memory_order_relaxed);
  log_config().n_pes.store(n_pes, std::memory_order_relaxed);
}

bool log_enabled(LogLevel level, unsigned subsys) {
  const LogConfig &config = log_config();
  return static_cast<int>(level) <= static_cast<int>(config.level.load(std::memory_order_relaxed)) &&
         (subsys & config.subsys_mask.load(std::memory_order_relaxed)) != 0;
}

void log_message(LogLevel level, unsigned /*subsys*/, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string body = vformat(fmt, args);
  va_end(args);
  static std::mutex &mutex = *new std::mutex;  // one line at a time from this process (never destroyed: the
                                               // process's end still logs what log_throttled held back)
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "%s tshmem %s: %s\n", pe_tag().c_str(), level_name(level), body.c_str());
  std::fflush(stderr);
}

}  // namespace tshmemi

extern "C" {

TSHMEM_API int tshmemx_last_error_code(void) { return tshmemi::last_error_code(); }
TSHMEM_API const char *tshmemx_last_error(void) { return tshmemi::last_error_message().c_str(); }
TSHMEM_API void tshmemx_clear_last_error(void) { tshmemi::clear_last_error(); }

TSHMEM_API void tshmemi_errors_reported_by_caller(int on) { tshmemi::set_errors_reported_by_caller(on != 0); }

TSHMEM_API const char *tshmemx_strerror(int status) {
  if (status < 0 || status >= TSHMEM_NUM_STATUS) return "not a tshmem status";
  // No default: -Wswitch-enum flags a new status without a name.
  switch (static_cast<tshmem_status_t>(status)) {
    case TSHMEM_SUCCESS: return "TSHMEM_SUCCESS";
    case TSHMEM_ERR_ASYMMETRIC: return "TSHMEM_ERR_ASYMMETRIC";
    case TSHMEM_ERR_INVALID_PE: return "TSHMEM_ERR_INVALID_PE";
    case TSHMEM_ERR_INVALID_ARG: return "TSHMEM_ERR_INVALID_ARG";
    case TSHMEM_ERR_OUT_OF_MEMORY: return "TSHMEM_ERR_OUT_OF_MEMORY";
    case TSHMEM_ERR_NOT_INITIALIZED: return "TSHMEM_ERR_NOT_INITIALIZED";
    case TSHMEM_ERR_CONFIG: return "TSHMEM_ERR_CONFIG";
    case TSHMEM_ERR_CUDA: return "TSHMEM_ERR_CUDA";
    case TSHMEM_ERR_MPI: return "TSHMEM_ERR_MPI";
    case TSHMEM_ERR_SYSTEM: return "TSHMEM_ERR_SYSTEM";
    case TSHMEM_ERR_UNREACHABLE_PE: return "TSHMEM_ERR_UNREACHABLE_PE";
    case TSHMEM_ERR_INTERNAL: return "TSHMEM_ERR_INTERNAL";
    case TSHMEM_ERR_TIMEOUT: return "TSHMEM_ERR_TIMEOUT";
    case TSHMEM_NUM_STATUS: break;
  }
  return "not a tshmem status";
}

}  // extern "C"
