// The bound of every wait on other PEs that tshmem makes on its own behalf (the collectives under the bootstrap,
// the rendezvous of barrier_all, team barriers and finalize, init's steps): TSHMEM_PROXY_TIMEOUT_MS, the bound the
// off-node proxy's waits already have, and a first warning after TSHMEM_WAIT_WARN_MS that says what is awaited and
// when the wait gives up. A wait that passes its bound puts the bootstrap into its failed state (bootstrap.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/error.h"

namespace tshmemi {

struct WaitBounds {
  int64_t timeout_ms = 300000;  ///< TSHMEM_PROXY_TIMEOUT_MS
  int64_t warn_ms = 10000;      ///< TSHMEM_WAIT_WARN_MS; 0: no warning
};

/// Names the tshmem call the calling thread is in ("tshmem_barrier_all") for the messages of the waits below it;
/// nested scopes keep the outermost name (the application's call).
class CallScope {
 public:
  explicit CallScope(const char *call);
  ~CallScope();
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;

 private:
  bool outermost_;
};

/// The calling thread's tshmem call, or "a tshmem call" outside any scope.
const char *current_call();

/// One bound for a whole call that waits more than once (a rendezvous: its quiet, then its agreement): while it
/// lives, a WaitClock of this thread that starts more than a second into the call ends at `bound` after the call
/// began, though never less than a second after the wait itself began (the other PEs get that long to arrive after
/// this PE's own first wait used the bound up). So the call ends within its bound and a second.
class CallDeadline {
 public:
  explicit CallDeadline(const WaitBounds &bounds);
  ~CallDeadline();
  CallDeadline(const CallDeadline &) = delete;
  CallDeadline &operator=(const CallDeadline &) = delete;

 private:
  bool outermost_;
};

/// What a thread that waits on other PEs runs between its polls besides pausing: the off-node transport's progress
/// (Transport::progress_from_waiter), where the operations of other PEs on this one need this PE's progress to
/// complete (UCX's active messages over tcp). The waiting thread serves them then, rather than a proxy thread woken
/// for each. Any thread.
class WaitProgress {
 public:
  virtual ~WaitProgress() = default;
  virtual void progress_while_waiting() = 0;
};

/// Makes `progress` what every wait runs between polls (nullptr: nothing); returns once no thread runs the one
/// before, so the caller may then destroy it.
void set_wait_progress(WaitProgress *progress);
/// Runs the progress set, if any: called by every wait on other PEs between polls (keep_waiting() does).
void progress_while_waiting();

/// One wait on other PEs. The caller polls and, after each poll that found nothing, calls keep_waiting().
class WaitClock {
 public:
  /// `what`: what is awaited, for the messages ("every PE to join an allreduce (MPI_Iallreduce)").
  WaitClock(const WaitBounds &bounds, int my_pe, std::string what);

  /// Runs progress_while_waiting(), then pauses briefly (spins, then yields, then sleeps up to 1 ms: a wait of
  /// seconds costs no core); logs the first warning once it is due; false once the bound has passed.
  bool keep_waiting();

  /// "<call>: PE 0 waited 3000 ms for <what> and gives up (TSHMEM_PROXY_TIMEOUT_MS)": the failure, the same shape
  /// on every PE.
  std::string expired_message() const;

 private:
  using Clock = std::chrono::steady_clock;
  WaitBounds bounds_;
  int my_pe_;
  std::string what_;
  Clock::time_point start_;
  int64_t limit_ms_;  ///< from start_: the bound, or less under a CallDeadline
  uint64_t polls_ = 0;
  bool warned_ = false;
};

}  // namespace tshmemi
