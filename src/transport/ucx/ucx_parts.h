// The UCX transport's parts, for the files of this folder only: the worker (ucx_worker.h), the messenger that
// carries the staged protocol over UCX's tag messages (ucx_messenger.cc) and the direct mode (ucx_direct.cc).
#pragma once

#include <memory>

#include "bootstrap/messenger.h"
#include "transport/ucx/ucx_worker.h"

namespace tshmemi {
namespace ucx {

/// Two-sided messages over `worker`'s endpoints (tag = the sender's PE), for the staged protocol and the direct
/// mode's control messages. `worker` outlives it.
std::unique_ptr<Messenger> make_messenger(Worker &worker);

/// The direct mode: ucp_put_nbx / ucp_get_nbx / ucp_atomic_op_nbx on the registered heap of every PE of another node,
/// from the proxy thread (the device channel) and from the calling thread (host calls).
Status make_direct(std::unique_ptr<Worker> worker, const TransportInputs &in, const std::string &path,
                   std::unique_ptr<Transport> *out);

}  // namespace ucx
}  // namespace tshmemi
