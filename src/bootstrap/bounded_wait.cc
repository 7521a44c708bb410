#include "bootstrap/bounded_wait.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace tshmemi {
namespace {

thread_local const char *t_call = nullptr;
thread_local bool t_has_deadline = false;
thread_local std::chrono::steady_clock::time_point t_deadline;  // of the outermost CallDeadline
constexpr int64_t kLeastAfterDeadlineMs = 1000;

std::atomic<WaitProgress *> g_progress{nullptr};
std::atomic<int> g_progressing{0};  // threads inside progress_while_waiting() that may hold g_progress's value

}  // namespace

// The count and the pointer are both sequentially consistent: a thread that counted itself in before the pointer was
// cleared is waited for; one that counts itself in after sees nullptr.
void set_wait_progress(WaitProgress *progress) {
  g_progress.store(progress);
  while (g_progressing.load() != 0) std::this_thread::yield();
}

void progress_while_waiting() {
  if (g_progress.load(std::memory_order_relaxed) == nullptr) return;
  g_progressing.fetch_add(1);
  if (WaitProgress *progress = g_progress.load()) progress->progress_while_waiting();
  g_progressing.fetch_sub(1, std::memory_order_release);
}

CallScope::CallScope(const char *call) : outermost_(t_call == nullptr) {
  if (outermost_) t_call = call;
}

CallScope::~CallScope() {
  if (outermost_) t_call = nullptr;
}

const char *current_call() { return t_call != nullptr ? t_call : "a tshmem call"; }

CallDeadline::CallDeadline(const WaitBounds &bounds) : outermost_(!t_has_deadline) {
  if (!outermost_) return;
  t_has_deadline = true;
  t_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(bounds.timeout_ms);
}

CallDeadline::~CallDeadline() {
  if (outermost_) t_has_deadline = false;
}

WaitClock::WaitClock(const WaitBounds &bounds, int my_pe, std::string what)
    : bounds_(bounds), my_pe_(my_pe), what_(std::move(what)), start_(Clock::now()), limit_ms_(bounds.timeout_ms) {
  if (t_has_deadline) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(t_deadline - start_).count();
    // Within the call's first second a wait has the whole bound (the call ends at most a second past its own).
    if (left < limit_ms_ - kLeastAfterDeadlineMs) limit_ms_ = std::max(left, kLeastAfterDeadlineMs);
  }
}

bool WaitClock::keep_waiting() {
  progress_while_waiting();
  ++polls_;
  // Poll without pause for the first second, as MPI's blocking collectives do, looking at the clock every 256 polls:
  // on a loaded machine a yield or a sleep hands the core to others for whole time slices (host barriers over MPI
  // took 70 us to 1.5 ms on average with a yield after 1 ms or a sleep after 100 ms). A wait that long is for a PE
  // that is late or gone: it sleeps between polls from then on, so a wait of seconds costs no core.
  if ((polls_ & 255u) != 0) return true;
  const int64_t waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  if (waited >= 1000000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    polls_ |= 255u;  // the clock at every poll from now on: each one sleeps
  }
  const int64_t waited_ms = waited / 1000;
  if (!warned_ && bounds_.warn_ms > 0 && waited_ms >= bounds_.warn_ms && waited_ms < limit_ms_) {
    warned_ = true;
    TSHMEMI_LOG(kWarn, kLogBoot,
                "%s: PE %d has waited %lld ms for %s; it gives up at %lld ms (TSHMEM_PROXY_TIMEOUT_MS; this note "
                "comes after TSHMEM_WAIT_WARN_MS)",
                current_call(), my_pe_, static_cast<long long>(waited_ms), what_.c_str(),
                static_cast<long long>(bounds_.timeout_ms));
  }
  return waited_ms < limit_ms_;
}

std::string WaitClock::expired_message() const {
  if (limit_ms_ < bounds_.timeout_ms)  // the call's own bound, mostly spent by an earlier wait of the call
    return format(
        "%s: PE %d waited %lld ms for %s and gives up: the call has used its bound of %lld ms "
        "(TSHMEM_PROXY_TIMEOUT_MS)",
        current_call(), my_pe_, static_cast<long long>(limit_ms_), what_.c_str(),
        static_cast<long long>(bounds_.timeout_ms));
  return format("%s: PE %d waited %lld ms for %s and gives up (TSHMEM_PROXY_TIMEOUT_MS)", current_call(), my_pe_,
                static_cast<long long>(bounds_.timeout_ms), what_.c_str());
}

}  // namespace tshmemi
