// What both UCX modes share: one ucp context and worker per PE, an endpoint to every PE of another node, and, for
// the direct mode, the heap registered with ucp_mem_map and every PE's remote key.
//
// Threads: the worker is made with UCS_THREAD_MODE_MULTI. The proxy thread issues the device channel's requests
// and drives progress; application threads issue their host calls on the same worker and progress it while they
// wait (one worker, UCX's lock: host calls need no hop through the proxy thread, and the proxy thread never waits for
// them). A UCX that grants less than MULTI is refused (the transport does not start; auto then takes mpi).
//
// Cancelling: where host calls move the caller's memory (the direct mode on a host heap), the endpoints are made
// with UCP_ERR_HANDLING_MODE_PEER, so that one can be closed by force (UCP_EP_CLOSE_FLAG_FORCE: UCX refuses it on
// an endpoint without error handling) and UCX then completes every request on it with UCS_ERR_CANCELED. (Elsewhere
// they are not: UCX gives such an endpoint no zero-copy rendezvous over memory it cannot invalidate, which on one
// host is cma's, and the staged protocol's messages, from and into the transport's own buffers, need no cancel.) A wait
// on a PE whose bound expires closes that PE's endpoint (cancel()) before it returns: what was issued to the PE can no
// longer write the caller's buffer, or read its source, once the caller has the error. Operations are issued through
// issue(), which holds the endpoint open (a shared lock) while UCX takes the operation; cancel() takes the lock
// exclusively, so no thread issues on an endpoint being closed.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/transport.h"

namespace tshmemi {
namespace ucx {

/// The version of the libucp this process loaded, and where it was loaded from.
std::string loaded_version();
std::string loaded_library();

class Worker {
 public:
  ~Worker();

  /// Collective over all PEs of `boot`: the context and worker, every PE's worker address, endpoints to the PEs of
  /// other nodes (`node_of_pe`). The verdict is agreed: on failure every PE returns success with *unavailable saying
  /// why (which PE, what failed). `wakeup`: UCX's WAKEUP feature, for wait_for_event() (it narrows the transports
  /// UCX picks for tag messages to those with events, so the staged mode goes without it). `cancellable`: endpoints
  /// with error handling, which cancel() can close (the same on every PE).
  Status create(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup, bool cancellable,
                std::string *unavailable);
  /// Collective, for the direct mode: registers the heap (`gpu`: CUDA memory) and exchanges every PE's remote key
  /// and heap base; agreed like create().
  Status map_heap(Bootstrap &boot, void *heap, uint64_t heap_bytes, bool gpu, std::string *unavailable);

  ucp_worker_h worker() const { return worker_; }
  /// Sleeps until the worker has something to progress (what arrived from a peer), at most `most`; returns at once
  /// where it has. Sleeps the whole time where UCX gives no event descriptor.
  void wait_for_event(std::chrono::microseconds most);
  /// Whether wait_for_event() returns when something arrives (UCX gave an event descriptor).
  bool wakes() const { return efd_ >= 0; }
  ucp_context_h context() const { return context_; }
  /// `pe`'s endpoint, for queries at init only (no cancel() runs then); operations go through issue().
  ucp_ep_h ep(int pe) const { return eps_[static_cast<size_t>(pe)]; }
  /// Issues `op(endpoint, remote key)` on `pe`'s endpoint, held open meanwhile (any thread): the request `op` returns,
  /// or UCS_ERR_NOT_CONNECTED where cancel() has closed the endpoint (cancelled() says why). `op` must not wait.
  template <class Op>
  ucs_status_ptr_t issue(int pe, Op op) const {
    std::shared_lock<std::shared_mutex> held(endpoints_mutex_);
    const size_t p = static_cast<size_t>(pe);
    if (eps_[p] == nullptr || !cancelled_[p].empty()) return UCS_STATUS_PTR(UCS_ERR_NOT_CONNECTED);
    return op(eps_[p], p < rkeys_.size() ? rkeys_[p] : nullptr);
  }
  /// Closes `pe`'s endpoint by force (any thread; once), so that UCX completes every request issued on it with
  /// UCS_ERR_CANCELED, and later operations on `pe` fail at once; `why` (the bound that expired) is what they report.
  /// Returns without waiting for the requests: wait_cancelled() does. Without `cancellable` endpoints only the later
  /// operations fail (the endpoint stays, for the teardown).
  void cancel(int pe, const std::string &why);
  /// The off-node path has stopped (a peer may be stopped or gone): endpoints without error handling are then left
  /// open at teardown, with the worker (the destructor says why).
  void abandon() { abandoned_ = true; }
  /// What cancel() does first, on the endpoint still open: `hook(pe)` (a last message to the PE). Set before any
  /// thread may cancel.
  void on_cancel(std::function<void(int)> hook) { on_cancel_ = std::move(hook); }
  /// Progresses the worker until `request` is no longer in progress (a request on an endpoint cancel() closed: UCX
  /// completes it with UCS_ERR_CANCELED, possibly within progress), at most a second; whether it completed (never
  /// without `cancellable` endpoints).
  bool wait_cancelled(ucs_status_ptr_t request);
  /// Why `pe`'s endpoint was closed by cancel(), or empty while it is open; any thread.
  std::string cancelled(int pe) const;
  /// `pe`'s address of its heap offset `offset` (the direct mode).
  uint64_t remote(int pe, uint64_t offset) const { return bases_[static_cast<size_t>(pe)] + offset; }
  int my_pe() const { return my_pe_; }
  int n_pes() const { return n_pes_; }
  /// Whether UCX in this process can move CUDA memory at all (a cuda_copy or GPUDirect transport is loaded).
  bool cuda_memory() const { return cuda_memory_; }

  /// Waits for `request` (a status pointer from a *_nbx call) while progressing the worker, at most `bound`;
  /// frees it. A wait past the bound fails with TSHMEM_ERR_TIMEOUT naming `call`, what it waited for and `pe`; it
  /// first cancels what is outstanding to `pe` (cancel(), then the request's own completion), so nothing of the
  /// call moves after it returned. `outcome`, where given: UCX's status of the operation (UCS_OK where it
  /// completed, or timed out).
  Status wait(ucs_status_ptr_t request, std::chrono::milliseconds bound, const char *call, const char *what, int pe,
              ucs_status_t *outcome = nullptr);
  /// Completes every operation issued on the worker so far (ucp_worker_flush_nbx), bounded as wait().
  Status flush(std::chrono::milliseconds bound, const char *call);
  /// Progresses the worker from this thread until `done()`, or until `bound` has passed since `start`: whether
  /// `done()` came first. What every bounded wait on UCX runs (wait(), wait_cancelled(), the bulk puts'
  /// acknowledgements, the proxy's cancel of what it has in flight).
  template <class Done>
  bool progress_until(std::chrono::steady_clock::time_point start, std::chrono::milliseconds bound, Done done);
  /// Progresses the worker from an application thread (wait() does so too, and a thread waiting on other PEs):
  /// counted, so that the proxy thread knows another thread takes what arrives.
  unsigned progress_from_application();
  /// How often application threads have progressed the worker; any thread.
  uint64_t application_progress() const { return application_progress_.load(std::memory_order_relaxed); }

 private:
  Status start(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup, bool cancellable);
  Status endpoints(Bootstrap &boot, const std::vector<int> &node_of_pe);
  Status map(Bootstrap &boot, void *heap, uint64_t heap_bytes, bool gpu);
  Status exchange(Bootstrap &boot, const void *mine, size_t bytes, std::vector<char> *all, size_t *stride);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  int efd_ = -1;  ///< the worker's event descriptor (ucp_worker_get_efd), -1 where UCX gives none
  std::atomic<uint64_t> application_progress_{0};  ///< progress_from_application() calls
  /// Held shared while an operation is issued on an endpoint (issue()), exclusively while cancel() closes one.
  mutable std::shared_mutex endpoints_mutex_;
  std::vector<ucp_ep_h> eps_;           ///< nullptr: none (not made, or closed by cancel())
  std::vector<ucp_rkey_h> rkeys_;       ///< nullptr with its endpoint
  std::vector<std::string> cancelled_;  ///< per PE: why cancel() closed its endpoint (under endpoints_mutex_)
  std::function<void(int)> on_cancel_;
  std::vector<uint64_t> bases_;
  int my_pe_ = -1, n_pes_ = 0;
  bool cuda_memory_ = false;
  bool cancellable_ = false;  ///< endpoints with error handling (UCP_ERR_HANDLING_MODE_PEER)
  bool abandoned_ = false;    ///< the path stopped (set by the proxy thread, read after it has been joined)
};

template <class Done>
bool Worker::progress_until(std::chrono::steady_clock::time_point start, std::chrono::milliseconds bound, Done done) {
  for (unsigned spins = 0; !done(); ++spins) {
    // A pass that moved nothing yields soon: the peer whose progress this waits for (a target serving UCX's active
    // messages from its own wait) may share the core, and 1024 spins held it from that peer for about a millisecond
    // a time (2 cores: host put + quiet over tcp then took 500-700 us in one run of two instead of 25-75 us).
    const bool yielding = spins > 32;
    if (progress_from_application() == 0 && yielding) std::this_thread::yield();
    // Once it yields, one pass may last a time slice of a busy core (milliseconds): 1024 of them overran a 1.5 s
    // bound by a second on a loaded 2-core machine, so the clock is read every pass from then on.
    if ((yielding || (spins & 1023u) == 1023u) && std::chrono::steady_clock::now() - start > bound) return done();
  }
  return true;
}

/// "ucx: <ucs status text>" for a failed call.
Status ucx_error(const char *call, ucs_status_t status);

}  // namespace ucx
}  // namespace tshmemi
