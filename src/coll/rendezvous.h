// The host rendezvous: tshmem_barrier_all, tshmem_barrier on a team of every PE, and tshmem_finalize's. Each
// completes this PE's transfers (the backend's, then its puts to other nodes), then agrees through the collective
// check, which is the barrier and names PEs whose calls differ; after it, what other nodes put here is visible.
#pragma once

#include "bootstrap/collective_check.h"
#include "mem/backend.h"

namespace tshmemi {

class Proxy;  // transport/proxy.h

class Rendezvous {
 public:
  /// `backend` and `check` outlive the rendezvous.
  Rendezvous(MemBackend &backend, CollectiveCheck &check) : backend_(backend), check_(check) {}

  /// From now on a rendezvous completes this PE's puts to other nodes first, and makes theirs visible here after.
  /// Set once at init, before any other thread calls; the proxy outlives the rendezvous's use of it.
  void attach_proxy(Proxy *proxy) { proxy_ = proxy; }

  /// Collective: tshmem_barrier_all.
  Status barrier_all();
  /// Collective: a barrier that `request` describes (tshmem_barrier(team)); its local status joins the quiet's.
  Status barrier(CollectiveRequest request);
  /// Collective over `group`'s members only (tshmem_barrier on a team without every PE, host memory).
  Status barrier_in(CheckGroup &group, CollectiveRequest request);
  /// Collective: tshmem_finalize's. It goes ahead when this PE's transfers cannot complete (the off-node path has
  /// stopped): refusing would keep every PE initialised with no way out; the teardown reports what was lost.
  Status finalize();

 private:
  Status meet(CollectiveRequest request, bool quiet_may_fail, CheckGroup *group = nullptr);
  /// Completes this PE's transfers: the backend's, and its puts to other nodes.
  Status quiet_all();

  MemBackend &backend_;
  CollectiveCheck &check_;
  Proxy *proxy_ = nullptr;
};

}  // namespace tshmemi
