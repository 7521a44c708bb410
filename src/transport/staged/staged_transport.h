// The staged protocol: the off-node operations carried as two-sided messages between the proxies, staged through
// host memory (a transport whose network cannot reach the heap directly: MPI on hosts whose MPI is not CUDA-aware,
// UCX into GPU memory without GPUDirect). Records (wire.h) batched into messages, copies between the heap and
// staging on ProxyMemory's lanes, flow control by credits, and a table of the replies this PE awaits.
// Not a transport of its own: a transport (a folder beside this one) hands it a Messenger.
#pragma once

#include <cstdint>
#include <memory>

#include "bootstrap/messenger.h"
#include "transport/proxy_memory.h"
#include "transport/transport.h"

namespace tshmemi {

constexpr int kProxySendBuffers = 8;
constexpr int kProxyRecvBuffers = 8;
/// Messages one PE may have sent to another that the target has not handled yet (flow control): what piles up
/// unmatched at a target is at most this many messages per origin PE.
constexpr int kProxyCreditsPerPeer = 8;
/// Most replies (get chunks, fetched values, flush acknowledgements) one PE awaits at once.
constexpr int kProxyMaxPending = 64;

/// Bytes of staging memory the protocol holds: its send and receive buffers of a header and a chunk each, and
/// the fetched-value slots. Independent of the number of PEs.
uint64_t staged_transport_staging_bytes(uint64_t chunk_bytes);
/// Bytes of reply bookkeeping it may hold at worst: bounded by kProxyMaxPending per origin PE.
uint64_t staged_transport_reply_queue_bytes(int n_pes);

/// Where the protocol applies what arrives, and how large its messages are.
struct StagedConfig {
  char *heap = nullptr;  ///< this PE's heap (local address)
  uint64_t heap_bytes = 0;
  uint64_t chunk_bytes = 0;  ///< most payload bytes in one message: the same on every PE
  int my_pe = -1, n_pes = 0;
};

/// Allocates the staging buffers (from `memory`, which must outlive the transport) and posts the receives.
Status make_staged_transport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const StagedConfig &config,
                             TransportSink &sink, std::unique_ptr<Transport> *out);

}  // namespace tshmemi
