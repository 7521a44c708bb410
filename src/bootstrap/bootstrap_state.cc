// The bootstrap's failed state (bootstrap.h): entered once, by the first collective that passed its bound or met an
// error of the engine below; every later collective fails at once with the first failure's message.
#include "bootstrap/bootstrap.h"

namespace tshmemi {

Status Bootstrap::usable(const char *call) const {
  if (!failed()) return TSHMEM_SUCCESS;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return set_error(failure_code_, "%s: tshmem is in a failed state since an earlier call failed (%s)", call,
                   failure_.c_str());
}

Status Bootstrap::fail(Status status, const std::string &message) {
  std::function<void(Status, const std::string &)> listener;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.empty()) {
      failure_code_ = status;
      failure_ = message;
      listener = failure_listener_;
    }
  }
  failed_.store(true, std::memory_order_release);
  if (listener) listener(status, message);
  return set_error(status,
                   "%s; tshmem is now in a failed state: later calls fail at once, and tshmem_finalize tears down "
                   "without waiting for other PEs",
                   message.c_str());
}

void Bootstrap::on_failure(std::function<void(Status, const std::string &)> listener) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  failure_listener_ = std::move(listener);
}

}  // namespace tshmemi
