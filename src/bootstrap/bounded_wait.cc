#include "bootstrap/bounded_wait.h"

#include <sched.h>

#include <thread>

namespace tshmemi {
namespace {

thread_local const char *t_call = nullptr;

}  // namespace

CallScope::CallScope(const char *call) : outermost_(t_call == nullptr) {
  if (outermost_) t_call = call;
}

CallScope::~CallScope() {
  if (outermost_) t_call = nullptr;
}

const char *current_call() { return t_call != nullptr ? t_call : "a tshmem call"; }

WaitClock::WaitClock(const WaitBounds &bounds, int my_pe, std::string what)
    : bounds_(bounds), my_pe_(my_pe), what_(std::move(what)), start_(Clock::now()) {}

bool WaitClock::keep_waiting() {
  ++polls_;
  // Most collectives complete within microseconds: spin first, then give the core away.
  if (polls_ > 64 && polls_ <= 4096) {
    sched_yield();
  } else if (polls_ > 4096) {
    std::this_thread::sleep_for(std::chrono::microseconds(polls_ > 65536 ? 1000 : 50));
  }
  if ((polls_ & 15u) != 0 && polls_ < 4096) return true;  // the clock costs little, but the spin costs less
  const int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
  if (!warned_ && bounds_.warn_ms > 0 && waited >= bounds_.warn_ms && waited < bounds_.timeout_ms) {
    warned_ = true;
    TSHMEMI_LOG(kWarn, kLogBoot,
                "%s: PE %d has waited %lld ms for %s; it gives up at %lld ms (TSHMEM_PROXY_TIMEOUT_MS; this note "
                "comes after TSHMEM_WAIT_WARN_MS)",
                current_call(), my_pe_, static_cast<long long>(waited), what_.c_str(),
                static_cast<long long>(bounds_.timeout_ms));
  }
  return waited < bounds_.timeout_ms;
}

std::string WaitClock::expired_message() const {
  return format("%s: PE %d waited %lld ms for %s and gives up (TSHMEM_PROXY_TIMEOUT_MS)", current_call(), my_pe_,
                static_cast<long long>(bounds_.timeout_ms), what_.c_str());
}

}  // namespace tshmemi
