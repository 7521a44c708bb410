// The transport seam: what reaching a PE of another node asks of a transport, and the table of transports.
// The proxy engine (proxy.cc) takes requests from its channels and calls a Transport's operations; it owns no wire
// format. Each transport is one folder under src/transport/ (mpi/: two-sided MPI, staged through host memory;
// ucx/: UCX's one-sided ucp calls on the registered heap, or the staged protocol over UCX's messages where the
// heap is GPU memory the network cannot reach) that defines its TransportEntry, transport_entry_<name>(); the
// one list of them is TSHMEM_REMOTE_TRANSPORTS in src/CMakeLists.txt, in the order TSHMEM_REMOTE_TRANSPORT=auto
// tries them. Nothing outside a transport's folder includes its headers (the include-rules test checks it).
//
// Called from the proxy thread only, except waiting_on(), send_raw() and progress_from_waiter(). Every operation
// is non-blocking: one that lacks a resource now (a send buffer, a reply entry) does what it can and says how far
// it got; the proxy calls progress() and then the operation again with the same arguments.
// Ordering: the operations to one PE apply there in the order issued (puts in order, a signal after its data),
// so fence() has nothing to wait for; quiet() completes once everything issued before it is complete at its
// target and every reply awaited has come.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "env.h"
#include "mem/backend.h"
#include "transport/proxy_memory.h"

namespace tshmemi {

/// Who waits for an operation's reply (a get's data, a fetched value, a quiet's acknowledgement).
struct Waiter {
  uint64_t tag = 0;     ///< nonzero: a result slot waits for the value (handed back as is on delivery)
  uint64_t mark = 0;    ///< nonzero: the engine's own mark of the request (a staged get's), handed back as is
  bool kernel = false;  ///< asked for by a kernel (the device channel): for a timeout's message
  bool host = false;    ///< the data goes to host memory (a kernel's put staging): the CPU writes it, no CUDA call
};

/// Bytes from this PE to heap offset `offset` of `pe`.
struct PutOp {
  int pe = -1;
  uint64_t offset = 0;
  const void *src = nullptr;  ///< host or device memory of this PE
  uint64_t bytes = 0;
  bool immediate = false;  ///< `src` is ordinary host memory valid only during the call (a request's inline value)
  bool host_src = false;   ///< `src` is host memory (a kernel's staged payload): read with the CPU, no CUDA call
};

/// Bytes at heap offset `offset` of `pe` into `dst` (host or device memory of this PE).
struct GetOp {
  int pe = -1;
  uint64_t offset = 0;
  uint64_t dst = 0;
  uint64_t bytes = 0;
  Waiter waiter;
};

/// Atomic `kind` (transport/amo_kind.h) of `width` bytes (4 or 8) on the word at heap offset `offset` of `pe`; a
/// fetching kind writes the old value to `dst`.
struct AmoOp {
  int pe = -1;
  uint64_t offset = 0;
  unsigned kind = 0;
  unsigned width = 0;
  uint64_t value = 0, compare = 0;
  uint64_t dst = 0;
  Waiter waiter;
};

/// A signal: SET (a store) or ADD (an atomic) of `value` on the 64-bit word at heap offset `offset` of `pe`.
struct SignalOp {
  int pe = -1;
  uint64_t offset = 0;
  unsigned kind = 0;  ///< TSHMEMI_AMO_SET or TSHMEMI_AMO_ADD (amo_kind::of_signal)
  uint64_t value = 0;
};

/// What a transport tells the proxy, from the proxy thread.
class TransportSink {
 public:
  virtual ~TransportSink() = default;
  /// The data or value of a get (`bytes` of it: the whole piece issued, also where the target refused it and sent
  /// none) or of a fetching atomic is at its `dst`: the waiter may have it. Every piece of every get is delivered.
  virtual void delivered(uint64_t dst, uint64_t bytes, const Waiter &waiter) = 0;
  /// Something a peer sent was refused (malformed, or a reply that matches no request): logged and counted.
  virtual void message_refused(const std::string &message) = 0;
  /// `pe`'s off-node path has stopped; it has told every PE itself.
  virtual void peer_stopped(int pe) = 0;
};

/// Host calls served on the calling thread, without the proxy thread's hop, by a transport that can (any
/// application thread may call them at once). Every wait inside keeps the proxy's bound; a wait past it fails
/// with TSHMEM_ERR_TIMEOUT and a message naming the call, the PE and what it waited for (the engine then stops the
/// off-node path).
class HostRma {
 public:
  virtual ~HostRma() = default;
  /// `bytes` from `src` to heap offset `offset` of `pe`; `src` may be reused on return.
  virtual Status put(const char *call, int pe, uint64_t offset, const void *src, size_t bytes) = 0;
  /// `bytes` at heap offset `offset` of `pe` into `dst`; complete on return.
  virtual Status get(const char *call, int pe, uint64_t offset, void *dst, size_t bytes) = 0;
  /// The data, then the signal word at heap offset `signal.offset` (SET: a store, ADD: an atomic), ordered after it.
  virtual Status put_signal(const char *call, const PutOp &data, const SignalOp &signal) = 0;
  /// Everything this process issued to other nodes is complete at its target.
  virtual Status quiet(const char *call) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // --- how peers are reached ---
  /// How this transport reaches `pe` (a PE of another node), for the init log and tshmem-info: "ucx direct
  /// (host memory, sm/posix)", "mpi staged (host memory)".
  virtual std::string path_of(int pe) const = 0;
  /// Host calls on the calling thread, or nullptr: they are posted to the proxy's host channel.
  virtual HostRma *host_rma() { return nullptr; }

  // --- operations ---
  /// Issues bytes [*done, op.bytes) as far as it can and advances *done. `src` is read until released() passes
  /// issued() as it was after the last byte.
  virtual Status put(const PutOp &op, uint64_t *done) = 0;
  /// Issues the get of bytes [*done, op.bytes) as far as it can and advances *done; the data is at `dst` once
  /// delivered() has said so for each of its bytes (and when a later quiet() completes).
  virtual Status get(const GetOp &op, uint64_t *done) = 0;
  /// *issued when the atomic was issued (else call again). A fetched value is delivered like a get's data.
  virtual Status amo(const AmoOp &op, bool *issued) = 0;
  /// *issued when the signal was issued (else call again).
  virtual Status signal(const SignalOp &op, bool *issued) = 0;
  /// Orders what was issued before it to each PE before what is issued after it.
  virtual Status fence() = 0;
  /// *complete once everything issued before the first call is complete at its target and no reply is awaited.
  virtual Status quiet(const Waiter &waiter, bool *complete) = 0;
  /// Moves everything on without blocking: hands what is ready to the network, applies what arrived, answers.
  /// *worked: something happened (an operation issued since the last call counts).
  virtual Status progress(bool *worked) = 0;
  /// An idle proxy thread's pause between passes, at most `most`: a transport that can be woken by what arrives
  /// for it (a file descriptor) returns as soon as something does; the default sleeps.
  virtual void idle(std::chrono::microseconds most) { std::this_thread::sleep_for(most); }
  /// Whether idle() returns as soon as something arrives from another PE.
  virtual bool wakes_on_arrival() const { return false; }
  /// From an application thread that waits on other PEs (a barrier's agreement, a host wait on a heap word), between
  /// its polls, at once with the proxy thread: moves what other PEs' operations on this PE need from it (UCX's
  /// emulated one-sided operations over transports without RDMA), so the waiting thread serves them instead of
  /// the proxy thread woken for each. Touches nothing the proxy thread owns; never blocks. Default: nothing (the
  /// proxy thread does all of it).
  virtual void progress_from_waiter() {}
  /// The same once the path has stopped: moves what tell_stopped() sent, where the network needs this process to
  /// deliver it (a connection to a peer that was stopped completes only when both progress). Any thread, at once
  /// with the proxy thread; never blocks. Default: nothing (MPI moves it in the bootstrap's own MPI calls).
  virtual void progress_after_stop() {}

  // --- local completion: when a source may be reused ---
  /// A point after every operation issued so far.
  virtual uint64_t issued() const = 0;
  /// Every operation issued before this point has been read out of its source (a point from issued()).
  virtual uint64_t released() const = 0;

  // --- bounds and failure ---
  /// What this PE has awaited from a peer for longer than `bound` (a reply, or room to send), as the message that
  /// stops the off-node path; empty when nothing has.
  virtual std::string overdue(std::chrono::milliseconds bound) = 0;
  /// Whom this PE awaits now, for a timeout's message ("; awaiting replies from PE(s) 1, 3"); any thread.
  virtual std::string waiting_on() const = 0;
  /// The path has stopped (`why`): what is still in flight will never be delivered, and the waiters were told so.
  /// A transport whose network could still deliver it later (into the heap, a staging buffer, or from a source)
  /// cancels it here and waits, bounded, until its network says it is cancelled. Default: nothing (what the transport
  /// receives later lands in its own buffers, and nobody applies it once the path stopped).
  virtual void abandon(const std::string &why) { (void)why; }
  /// Tells every other PE, best effort, that this PE's off-node path has stopped (theirs stop too).
  virtual void tell_stopped() = 0;
  /// Teardown, after the last progress(): withdraws what waits for peers (posted receives).
  virtual void close() = 0;
  /// For tests, any thread: sends `pe` the raw `bytes` at `message` as one message, as a broken or hostile peer
  /// could; returns once the network has taken it.
  virtual Status send_raw(int pe, const void *message, size_t bytes) = 0;
};

/// What a transport is made from, at init (collective over all PEs of `boot`).
struct TransportInputs {
  Bootstrap *boot = nullptr;
  const EnvOptions *env = nullptr;  ///< the one environment table: each transport reads its own rows there
  char *heap = nullptr;             ///< this PE's heap (local address; GPU memory when heap_on_gpu)
  uint64_t heap_bytes = 0;
  bool heap_on_gpu = false;
  /// Collective: backs the whole heap with memory (a heap backed as it is used), before a transport registers it
  /// whole with a network (UCX's direct mode on a GPU heap).
  std::function<Status()> back_whole_heap;
  int cuda_device = -1;
  uint64_t chunk_bytes = 0;       ///< TSHMEM_PROXY_CHUNK, the same on every PE
  int64_t timeout_ms = 0;         ///< the bound of every wait for a peer
  std::vector<int> node_of_pe;    ///< node of each PE: the transport serves the PEs of other nodes than this one's
  ProxyMemory *memory = nullptr;  ///< staging memory and copies (outlives the transport)
  TransportSink *sink = nullptr;  ///< what the transport tells the engine
};

/// One row of the transport table: a transport's name and how to make it.
struct TransportEntry {
  const char *name;
  /// Empty when this build has the transport; else why not ("built without UCX: pkg-config found no ucx >= 1.13").
  std::string (*not_built)();
  /// What the transport is built against and would use here (versions, libraries), for tshmem-info and the log.
  std::string (*about)();
  /// Collective over all PEs: makes the transport into *out, or leaves it empty with the reason in *unavailable
  /// (the same verdict on every PE); an error return fails init on every PE.
  Status (*make)(const TransportInputs &in, std::unique_ptr<Transport> *out, std::string *unavailable);
};

/// The transports of this build, in the order TSHMEM_REMOTE_TRANSPORT=auto tries them (table.cc).
const std::vector<const TransportEntry *> &transport_table();
/// The row named `name`, or nullptr.
const TransportEntry *find_transport(const std::string &name);
/// "auto|ucx|mpi": the values TSHMEM_REMOTE_TRANSPORT takes.
std::string transport_choices();

}  // namespace tshmemi
