// What both UCX modes share: one ucp context and worker per PE, an endpoint to every PE of another node, and, for
// the direct mode, the heap registered with ucp_mem_map and every PE's remote key.
//
// Threads: the worker is made with UCS_THREAD_MODE_MULTI. The proxy thread issues the device channel's requests
// and drives progress; application threads issue their host calls on the same worker and progress it while they
// wait (one worker, UCX's lock: host calls need no hop through the proxy thread, and the proxy thread never waits for
// them). A UCX that grants less than MULTI is refused (the transport does not start; auto then takes mpi).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
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
  /// UCX picks for tag messages to those with events, so the staged mode goes without it).
  Status create(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup, std::string *unavailable);
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
  ucp_ep_h ep(int pe) const { return eps_[static_cast<size_t>(pe)]; }
  ucp_rkey_h rkey(int pe) const { return rkeys_[static_cast<size_t>(pe)]; }
  /// `pe`'s address of its heap offset `offset` (the direct mode).
  uint64_t remote(int pe, uint64_t offset) const { return bases_[static_cast<size_t>(pe)] + offset; }
  int my_pe() const { return my_pe_; }
  int n_pes() const { return n_pes_; }
  /// Whether UCX in this process can move CUDA memory at all (a cuda_copy or GPUDirect transport is loaded).
  bool cuda_memory() const { return cuda_memory_; }

  /// Waits for `request` (a status pointer from a *_nbx call) while progressing the worker, at most `bound`;
  /// frees it. A wait past the bound fails with TSHMEM_ERR_TIMEOUT naming `call`, what it waited for and `pe`.
  /// `outcome`, where given: UCX's status of the operation (UCS_OK where it completed, or timed out).
  Status wait(ucs_status_ptr_t request, std::chrono::milliseconds bound, const char *call, const char *what, int pe,
              ucs_status_t *outcome = nullptr);
  /// Completes every operation issued on the worker so far (ucp_worker_flush_nbx), bounded as wait().
  Status flush(std::chrono::milliseconds bound, const char *call);
  /// Progresses the worker from an application thread (wait() does so too, and a thread waiting on other PEs):
  /// counted, so that the proxy thread knows another thread takes what arrives.
  unsigned progress_from_application();
  /// How often application threads have progressed the worker; any thread.
  uint64_t application_progress() const { return application_progress_.load(std::memory_order_relaxed); }

 private:
  Status start(Bootstrap &boot, const std::vector<int> &node_of_pe, bool wakeup);
  Status endpoints(Bootstrap &boot, const std::vector<int> &node_of_pe);
  Status map(Bootstrap &boot, void *heap, uint64_t heap_bytes, bool gpu);
  Status exchange(Bootstrap &boot, const void *mine, size_t bytes, std::vector<char> *all, size_t *stride);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  int efd_ = -1;  ///< the worker's event descriptor (ucp_worker_get_efd), -1 where UCX gives none
  std::atomic<uint64_t> application_progress_{0};  ///< progress_from_application() calls
  std::vector<ucp_ep_h> eps_;
  std::vector<ucp_rkey_h> rkeys_;
  std::vector<uint64_t> bases_;
  int my_pe_ = -1, n_pes_ = 0;
  bool cuda_memory_ = false;
};

/// "ucx: <ucs status text>" for a failed call.
Status ucx_error(const char *call, ucs_status_t status);

}  // namespace ucx
}  // namespace tshmemi
