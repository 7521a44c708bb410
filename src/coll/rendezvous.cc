#include "coll/rendezvous.h"

#include "transport/proxy.h"

namespace tshmemi {

Status Rendezvous::barrier_all() { return meet(CollectiveRequest("tshmem_barrier_all"), false); }

Status Rendezvous::barrier(CollectiveRequest request) { return meet(std::move(request), false); }

Status Rendezvous::barrier_in(CheckGroup &group, CollectiveRequest request) {
  return meet(std::move(request), false, &group);
}

Status Rendezvous::finalize() { return meet(CollectiveRequest("tshmem_finalize"), true); }

Status Rendezvous::meet(CollectiveRequest request, bool quiet_may_fail, CheckGroup *group) {
  // One bound for the whole call: a quiet that waited the bound out on a stopped PE leaves the agreement a second.
  const CallDeadline deadline(check_.bounds());
  const Status quiet = quiet_all();
  if (quiet != TSHMEM_SUCCESS && request.local_status == TSHMEM_SUCCESS && !quiet_may_fail) {
    request.local_status = quiet;
    request.local_error = last_error_message();
  }
  TSHMEM_CHECK(group != nullptr ? check_.agree_in(*group, request) : check_.agree(request));
  return proxy_ != nullptr ? proxy_->sync() : TSHMEM_SUCCESS;
}

Status Rendezvous::quiet_all() {
  TSHMEM_CHECK(backend_.quiet());
  return proxy_ != nullptr ? proxy_->quiet() : TSHMEM_SUCCESS;
}

}  // namespace tshmemi
