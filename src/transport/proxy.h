// The off-node proxy (design.md, "Beyond one node"): PEs of other nodes are reached through it, from every
// backend. Host calls (tshmem_putmem, tshmem_getmem, tshmem_quiet) post requests to its host channel; kernels (and
// the tests' CPU producers) post to its device channel. One thread per PE drains both into a transport.
// The parts: proxy.cc (this interface, the thread, bounded waits and failure), channel_reader.h (the channels'
// consuming side), wire.h (requests' rules, records, batching), transport.h (what a transport does, and the table
// of transports: one folder each under src/transport/), proxy_memory.h (how the heap is touched).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "env.h"
#include "mem/backend.h"
#include "tshmem/device/proxy_types.h"

namespace tshmemi {

class Proxy {
 public:
  virtual ~Proxy() = default;
  /// Writes `bytes` from `src` (host or device memory) to offset `heap_offset` of `pe`'s heap; `src` may be
  /// reused on return. Remote completion: quiet().
  virtual Status put(uint64_t heap_offset, const void *src, size_t bytes, int pe) = 0;
  /// Reads `bytes` at offset `heap_offset` of `pe`'s heap into `dst`; complete on return.
  virtual Status get(void *dst, uint64_t heap_offset, size_t bytes, int pe) = 0;
  /// Completes every request this PE has posted (host channel, and what is visible in the device channel),
  /// at its target.
  virtual Status quiet() = 0;
  /// The data, then the signal word at heap offset `signal_offset` of `pe` (SET or ADD, TSHMEMI_PROXY_SIGNAL_*);
  /// complete at the target on return. `call` names the API call in errors.
  virtual Status put_signal(const char *call, uint64_t heap_offset, const void *src, size_t bytes,
                            uint64_t signal_offset, uint64_t value, unsigned signal_op, int pe) = 0;
  /// After a barrier: makes what other PEs wrote into this PE's heap visible to its own loads.
  virtual Status sync() = 0;
  /// Collective over all PEs: drains every channel, then stops the proxy.
  virtual Status destroy() = 0;
  /// The channel kernels post to (host address; CPU producers post there too).
  virtual tshmemi_proxy_channel *device_channel() = 0;
  /// Its device-memory side, where kernels take tickets and read the counters they wait on (device address);
  /// nullptr without a GPU.
  virtual tshmemi_proxy_device_side *device_side() = 0;
  /// Requests refused since init, and the last refusal's message.
  virtual uint64_t refused(std::string *last) = 0;
  /// The transport's name (its row of the table) and how it reaches `pe`, for the init log and the queries.
  virtual const std::string &transport_name() const = 0;
  virtual std::string path_of(int pe) const = 0;
  /// Why the transports before the chosen one in TSHMEM_REMOTE_TRANSPORT=auto's order were not taken ("" if none).
  virtual const std::string &choice_note() const = 0;
  /// For tests: sends `pe` a get reply of `bytes` with request id `id` that nobody asked for, as a broken or
  /// hostile peer could; its proxy must refuse it. Blocks until MPI has taken the message.
  virtual Status send_unsolicited_reply(int pe, uint64_t id, uint64_t bytes) = 0;
};

/// Sizes of the proxy, from the environment.
struct ProxyConfig {
  uint64_t chunk_bytes = 512 * 1024;   ///< TSHMEM_PROXY_CHUNK: most payload bytes in one message
  uint32_t ring_entries = 1024;        ///< TSHMEM_PROXY_RING: requests in each channel
  uint64_t stage_max = 64 * 1024;      ///< TSHMEM_PROXY_STAGE_MAX: the largest put a kernel stages itself
  int64_t timeout_ms = 300000;         ///< TSHMEM_PROXY_TIMEOUT_MS: the longest wait for the proxy
  int64_t warn_ms = 10000;             ///< TSHMEM_WAIT_WARN_MS: a host call's first word on a long wait (0: none)
  int64_t device_wait_timeout_ms = 0;  ///< TSHMEM_WAIT_TIMEOUT_MS: a kernel's waits end at the smaller nonzero bound
  const EnvOptions *env = nullptr;     ///< the transports' own rows (TSHMEM_REMOTE_TRANSPORT, TSHMEM_UCX_*)
  int host_pes = 0;                    ///< the PEs on this host (the launcher's count; 0: unknown): see cores_shared
};

/// Whether the `host_pes` PEs of this host have fewer cores than threads that want one (each PE's application
/// thread and its proxy thread), from the CPUs this process may run on. Where they do, an idle proxy that is woken
/// by what arrives pauses longer between its looks at the channels (proxy.cc, "pause").
bool cores_shared(int host_pes);

/// Bytes of staging memory one PE's proxy holds: independent of the number of PEs and of message sizes.
uint64_t proxy_staging_bytes(const ProxyConfig &config);
/// Bytes of reply bookkeeping a proxy may hold at worst: bounded by kProxyMaxPending per origin PE.
uint64_t proxy_reply_queue_bytes(int n_pes);

/// TSHMEM_REMOTE_TRANSPORT's value is "auto" or a row of the transport table; else an error naming the value.
Status check_remote_transport(const std::string &value);

/// Collective over all PEs of `boot`: starts this PE's proxy thread over the heap of `mem` (host memory or,
/// with cuda_device >= 0, GPU memory) and the transport TSHMEM_REMOTE_TRANSPORT names (auto: the first of the
/// table that is built and starts). When none can start (auto), returns success with *out empty and the reasons
/// in *unavailable (the same on every PE); a transport named that cannot start fails init. Fails on every PE when
/// it fails on one.
Status make_proxy(Bootstrap &boot, MemBackend &mem, uint64_t heap_bytes, const ProxyConfig &config, int cuda_device,
                  std::unique_ptr<Proxy> *out, std::string *unavailable);

}  // namespace tshmemi
