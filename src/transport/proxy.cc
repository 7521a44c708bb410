// The off-node proxy: one thread per PE that drains this PE's channels (requests from kernels and from host
// calls) into two-sided messages to other PEs' proxies, and applies what they send to this PE's heap.
//
// A message is a sequence of records (a 56-byte header, then payload for puts and get replies). Small
// requests to one PE that are visible in the rings at once travel as one message (a batch): a kernel's many
// `p`s cost one MPI message, not one each. A larger put is cut into chunks of at most `chunk` bytes, one
// message each.
// Origin: messages are assembled in send buffers and handed to MPI strictly in the order they were
// assembled (the outbox), each once the copies into it (device->host on a GPU) have completed. Copies are
// asynchronous (ProxyMemory lanes), so the copy of one chunk overlaps the transfer of the ones before it and
// the thread keeps driving MPI. A ring slot is freed (tail advanced) once the message holding the last of
// its data has been handed to MPI. A QUIET sends a FLUSH record to every PE written since the last one and
// completes when every awaited reply has come back.
// Target: receives land in a FIFO of pre-posted buffers and are handled in the order MPI matched them, so
// the messages of one origin apply in the order it sent them (MPI's non-overtaking rule), and the records
// of a message in their order: puts in order, a signal after its data, a FLUSH acknowledged only after
// everything before it is in the heap. A buffer goes back to MPI once the copies out of it have completed.
// Replies go through a queue, so handling a message never waits for a send buffer (two proxies that both
// wait to send would otherwise deadlock). Every reply is checked against the table of replies this PE awaits
// and takes its destination from that table, never from the message.
// Flow control: a PE may have at most kProxyCreditsPerPeer messages to one PE that the target has not handled
// yet (credits). The target returns credits once it has handled messages, on a small control slot per PE that
// never waits for credits itself, so what piles up unmatched in MPI at a target is bounded per origin even
// where eager sends complete locally.
// Bounds and failure: the proxy keeps the bound of every wait on it (TSHMEM_PROXY_TIMEOUT_MS, or the smaller
// TSHMEM_WAIT_TIMEOUT_MS): a reply awaited, or credits from a PE, for longer stops the off-node path, and so does
// an MPI error or a host call that waited longer; a watchdog thread stops it when the proxy thread itself has not
// run for that long (held in a CUDA call). Stopping writes the message into both channels, stores
// TSHMEMI_PROXY_STOPPED in their counters and result tags (a kernel's wait ends there and traps with the
// message), tells every other PE's proxy (which stops too: the off-node path is one thing), and every later host
// call fails at once with the reason.
#include "transport/proxy.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/agree.h"
#include "bootstrap/messenger.h"
#include "transport/proxy_memory.h"

namespace tshmemi {
namespace {

enum WireKind : uint32_t {
  kPut = 1,
  kSignal,
  kAmo,
  kGet,
  kFlush,
  kGetReply,
  kAmoReply,
  kFlushAck,
  kCredit,  ///< control: `value` more messages may be sent to the PE this came from
  kGone,    ///< control: the sender's proxy has stopped
};

/// The header of every record; payload bytes follow it for kPut and kGetReply.
struct Wire {
  uint32_t kind = 0;
  uint8_t amo = 0, width = 0, pad[2] = {};
  uint64_t offset = 0;  ///< heap offset at the target
  uint64_t bytes = 0;   ///< payload bytes (kPut, kGetReply) or bytes asked for (kGet)
  uint64_t value = 0, compare = 0;
  uint64_t id = 0;  ///< nonzero: the request wants a reply, which echoes it (the origin's Expected entry)
};
static_assert(sizeof(Wire) == 48, "wire header");
constexpr size_t kHeader = sizeof(Wire);
/// Fetched values (an atomic's old value) a target writes before it sends them, without waiting.
constexpr uint64_t kAmoSlots = 1024;
/// Records with at most this much payload join batches; larger puts travel as messages of their own.
constexpr size_t kSmallPayload = 2048;
/// Most bytes of a batch: below the eager limits of MPI's transports (Open MPI: 4 KiB shared memory, 64 KiB
/// tcp), so a batch is one eager message.
constexpr size_t kBatchBytes = 4032;

size_t padded(size_t bytes) { return (bytes + 7) & ~size_t{7}; }
bool carries_payload(uint32_t kind) { return kind == kPut || kind == kGetReply; }

/// A point on both lanes of ProxyMemory (0: nothing to wait for).
struct Point {
  uint64_t lane[2] = {0, 0};
};

/// A message being assembled or waiting for its copies: records to one PE in one send buffer.
struct Outgoing {
  int buffer = -1;
  int pe = -1;
  size_t bytes = 0;
  uint64_t seq = 0;     ///< messages are handed to MPI in this order
  bool open = true;     ///< still being assembled
  bool batch = false;   ///< small records may join it while open
  bool copies[2] = {};  ///< copies into it were issued on a lane
  Point ready;          ///< set when sealed: those copies are complete once it has passed
};

/// A request whose slot is freed once message `seq` has been handed to MPI.
struct Taken {
  uint64_t ticket, seq;
  bool result_slot;  ///< freed only once its reader has taken the value (proxy_types.h)
};

using Clock = std::chrono::steady_clock;

/// A reply this PE awaits (get data, a fetched value, a flush acknowledgement). A reply is accepted only if it
/// matches an entry (id, PE, kind, size); its data goes where the entry says.
struct Expected {
  uint64_t id = 0;      ///< 0: the entry is free
  int pe = -1;          ///< the PE the reply must come from
  uint32_t kind = 0;    ///< kGetReply, kAmoReply or kFlushAck
  uint64_t token = 0;   ///< where its data or value goes
  uint64_t bytes = 0;   ///< data bytes (kGetReply) or the value's width (kAmoReply)
  uint64_t tag = 0;     ///< nonzero: stored at token + 8 once the value is there (a kernel's result slot)
  bool kernel = false;  ///< asked for by a kernel (the device channel)
  Clock::time_point since;
};

/// A handled receive buffer, back to MPI once the copies out of it have completed.
struct Arrived {
  int buffer = -1;
  bool copies[2] = {};
  Point ready;
  std::vector<Expected> results;  ///< replies whose data or value were copied out: then tag, and one reply less
};

/// A small send slot of its own per PE for control records (credits, the stop notice): never waits for a send
/// buffer or for credits, so credits flow however full the outbox is.
struct Control {
  Wire wire;
  Messenger::Request request;
};

struct Reply {
  int pe;
  Wire wire;
  Point ready;                         ///< sent once what was applied before it (and its atomic) is complete
  const uint64_t *value_at = nullptr;  ///< a fetched value still being written there (an atomic's old value)
};

const char *op_name(unsigned op) {
  switch (op) {
    case TSHMEMI_PROXY_PUT: return "PUT";
    case TSHMEMI_PROXY_GET: return "GET";
    case TSHMEMI_PROXY_PUT_SIGNAL: return "PUT_SIGNAL";
    case TSHMEMI_PROXY_SIGNAL: return "SIGNAL";
    case TSHMEMI_PROXY_AMO: return "AMO";
    case TSHMEMI_PROXY_FENCE: return "FENCE";
    case TSHMEMI_PROXY_QUIET: return "QUIET";
  }
  return "unknown";
}

bool within(uint64_t offset, uint64_t bytes, uint64_t heap) { return offset <= heap && bytes <= heap - offset; }

class ProxyEngine final : public Proxy {
 public:
  ProxyEngine(Bootstrap &boot, MemBackend &mem, uint64_t heap_bytes, const ProxyConfig &config)
      : boot_(boot),
        heap_(static_cast<char *>(mem.local_base())),
        heap_bytes_(heap_bytes),
        config_(config),
        capacity_(kHeader + padded(config.chunk_bytes)),
        batch_bytes_(std::min(capacity_, kBatchBytes)),
        my_pe_(boot.rank()),
        n_pes_(boot.size()),
        dirty_(static_cast<size_t>(boot.size()), 0),
        credits_(static_cast<size_t>(boot.size()), kProxyCreditsPerPeer),
        owed_(static_cast<size_t>(boot.size()), 0),
        credit_slots_(static_cast<size_t>(boot.size())),
        notice_slots_(static_cast<size_t>(boot.size())),
        awaiting_(static_cast<size_t>(boot.size())) {
    for (int i = kProxyMaxPending - 1; i >= 0; --i) free_expected_.push_back(i);
  }

  ~ProxyEngine() override {
    stop_thread();
    if (!memory_) return;
    // After destroy() nothing is active; after a failed start, nothing was sent. After a failure a send may
    // never complete (its PE may be gone): it is released, and its buffer stays allocated (MPI may read it).
    bool leak = false;
    for (Messenger::Request &r : recv_requests_) msg_->cancel(&r);
    for (std::vector<Control> *slots : {&credit_slots_, &notice_slots_})
      for (Control &c : *slots) {
        leak |= c.request.active;
        msg_->release(&c.request);
      }
    for (size_t i = 0; i < send_.size(); ++i) {
      if (send_requests_[i].active) {
        msg_->release(&send_requests_[i]);
        continue;  // leaked
      }
      memory_->free_staging(send_[i]);
    }
    for (char *b : recv_) memory_->free_staging(b);
    for (tshmemi_proxy_channel *ring : rings_)
      if (ring != nullptr) memory_->free_staging(ring);
    if (amo_slots_ != nullptr) memory_->free_staging(amo_slots_);
    if (leak) TSHMEMI_LOG(kInfo, kLogInit, "off-node proxy: control sends still in flight at teardown were released");
  }

  Status create(std::unique_ptr<Messenger> messenger, std::unique_ptr<ProxyMemory> memory) {
    msg_ = std::move(messenger);
    memory_ = std::move(memory);
    send_.assign(kProxySendBuffers, nullptr);
    recv_.assign(kProxyRecvBuffers, nullptr);
    send_requests_.resize(kProxySendBuffers);
    recv_requests_.resize(kProxyRecvBuffers);
    for (char *&b : send_) TSHMEM_CHECK(memory_->alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
    for (char *&b : recv_) TSHMEM_CHECK(memory_->alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
    for (int i = 0; i < kProxySendBuffers; ++i) free_.push_back(i);
    TSHMEM_CHECK(memory_->alloc_staging((kAmoSlots + 1) * sizeof(uint64_t), reinterpret_cast<void **>(&amo_slots_)));
    for (tshmemi_proxy_channel *&ring : rings_) {
      const size_t bytes = TSHMEMI_PROXY_CHANNEL_BYTES(config_.ring_entries);
      TSHMEM_CHECK(memory_->alloc_staging(bytes, reinterpret_cast<void **>(&ring)));
      std::memset(static_cast<void *>(ring), 0, bytes);
      ring->layout = TSHMEMI_PROXY_LAYOUT;
      ring->capacity = config_.ring_entries;
      ring->head_ptr = &ring->head;
    }
    // Kernels count tickets in device memory (a GPU's atomics on host memory are not atomic with the CPU's),
    // and read the counters they wait on there (proxy_types.h, tshmemi_proxy_device_side).
    TSHMEM_CHECK(memory_->alloc_device_side(rings_[kDeviceRing], my_pe_, &device_side_));
    if (device_side_ != nullptr) rings_[kDeviceRing]->head_ptr = &device_side_->head;
    for (int i = 0; i < kProxyRecvBuffers; ++i) TSHMEM_CHECK(post_receive(i));
    thread_ = std::thread([this] { run(); });
    watchdog_ = std::thread([this] { watch(); });
    return TSHMEM_SUCCESS;
  }

  // --- host calls (any application thread) ---

  Status put(uint64_t heap_offset, const void *src, size_t bytes, int pe) override {
    tshmemi_proxy_request request = {};
    request.op = TSHMEMI_PROXY_PUT;
    request.pe = pe;
    request.remote = heap_offset;
    request.local = reinterpret_cast<uint64_t>(src);
    request.bytes = bytes;
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host("tshmem_putmem", request, &ticket));
    return wait_for("tshmem_putmem", "its off-node proxy to take the put", pe,
                    [&] { return tshmemi_proxy_taken(host_ring(), ticket); });
  }

  Status get(void *dst, uint64_t heap_offset, size_t bytes, int pe) override {
    tshmemi_proxy_request request = {};
    request.op = TSHMEMI_PROXY_GET;
    request.pe = pe;
    request.remote = heap_offset;
    request.local = reinterpret_cast<uint64_t>(dst);
    request.bytes = bytes;
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host("tshmem_getmem", request, &ticket));
    return quiet_ring("tshmem_getmem", pe);
  }

  Status quiet() override { return quiet_ring("tshmem_quiet", -1); }
  Status sync() override { return TSHMEM_SUCCESS; }  // the target's proxy applied and settled before acking

  Status destroy() override {
    if (!thread_.joinable()) return TSHMEM_SUCCESS;
    // Everything posted here completes at its target; then no PE sends any more once all are past the
    // barrier, and each proxy may stop. A path that has stopped is not drained: what was posted and not
    // complete is lost, and finalize says so.
    Status drained = TSHMEM_SUCCESS;
    if (!failed_.load(std::memory_order_acquire)) {
      command_.store(kDrain, std::memory_order_release);
      drained = wait_for("tshmem_finalize", "its off-node proxy to complete every request posted", -1,
                         [&] { return drained_.load(std::memory_order_acquire); });
    }
    if (failed_.load(std::memory_order_acquire))
      drained = set_error(failure_code(),
                          "tshmem_finalize: requests to PEs of other nodes were not completed on "
                          "PE %d, and it tears down without them: %s",
                          my_pe_, failure().c_str());
    const Status barrier = boot_.barrier();
    stop_thread();
    for (Messenger::Request &r : recv_requests_) msg_->cancel(&r);
    if (drained != TSHMEM_SUCCESS) return drained;
    return barrier;
  }

  tshmemi_proxy_channel *device_channel() override { return rings_[kDeviceRing]; }
  tshmemi_proxy_device_side *device_side() override { return device_side_; }

  uint64_t refused(std::string *last) override {
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    if (last != nullptr) *last = last_refusal_;
    return refused_;
  }

  Status send_unsolicited_reply(int pe, uint64_t id, uint64_t bytes) override {
    std::vector<char> message(kHeader + padded(bytes), 0x5a);
    Wire wire;
    wire.kind = kGetReply;
    wire.bytes = bytes;
    wire.id = id;
    std::memcpy(message.data(), &wire, kHeader);
    Messenger::Request request;
    TSHMEM_CHECK(msg_->isend(message.data(), message.size(), pe, &request));
    for (bool done = false; !done;) TSHMEM_CHECK(msg_->test(&request, &done));
    return TSHMEM_SUCCESS;
  }

 private:
  enum Command { kRun, kDrain, kStop };
  static constexpr int kDeviceRing = 0, kHostRing = 1, kInternal = -1;
  /// Requests taken from the rings in one pass before the thread turns to MPI again.
  static constexpr int kTakesPerPass = 256;
  /// Idle passes (each polls MPI and both rings) before the thread starts to sleep between passes.
  static constexpr unsigned kSpinsBeforeSleep = 2048;
  /// Credits are returned once this many messages of a PE have been handled (half of what it may send).
  static constexpr int kCreditReturn = kProxyCreditsPerPeer / 2;
  static_assert((kProxyMaxPending & (kProxyMaxPending - 1)) == 0, "reply ids keep the table index in low bits");

  /// How long anything may wait on the proxy: TSHMEM_PROXY_TIMEOUT_MS, or TSHMEM_WAIT_TIMEOUT_MS when smaller.
  static std::chrono::milliseconds bound_of(const ProxyConfig &config) {
    int64_t ms = config.timeout_ms;
    if (config.device_wait_timeout_ms > 0) ms = std::min(ms, config.device_wait_timeout_ms);
    return std::chrono::milliseconds(ms);
  }

  tshmemi_proxy_channel *host_ring() { return rings_[kHostRing]; }

  Status quiet_ring(const char *call, int pe) {
    tshmemi_proxy_request request = {};
    request.op = TSHMEMI_PROXY_QUIET;
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host(call, request, &ticket));
    return wait_for(call, "every request posted before to complete at its target", pe,
                    [&] { return tshmemi_proxy_done(host_ring(), ticket); });
  }

  // Posts to the host ring, waiting (bounded) while it is full. A ticket taken and never written would stop
  // the ring for good: when the wait for room fails, the path is stopped anyway.
  Status post_host(const char *call, const tshmemi_proxy_request &request, uint64_t *ticket) {
    if (failed_.load(std::memory_order_acquire)) return stopped_error(call);
    tshmemi_proxy_channel *ring = host_ring();
    *ticket = __atomic_fetch_add(ring->head_ptr, 1, __ATOMIC_RELAXED);
    const uint64_t t = *ticket;
    TSHMEM_CHECK(wait_for(call, "room in its off-node proxy's host channel (full)", request.pe,
                          [&] { return t - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) < ring->capacity; }));
    tshmemi_proxy_request *slot = tshmemi_proxy_slots(ring) + (t & (ring->capacity - 1));
    tshmemi_proxy_request copy = request;
    copy.seq = 0;
    std::memcpy(reinterpret_cast<char *>(slot) + sizeof(uint64_t),
                reinterpret_cast<const char *>(&copy) + sizeof(uint64_t), sizeof(copy) - sizeof(uint64_t));
    __atomic_store_n(&slot->seq, t + 1, __ATOMIC_RELEASE);
    return TSHMEM_SUCCESS;
  }

  // Waits until ready(), at most TSHMEM_PROXY_TIMEOUT_MS; fails at once when the path has stopped. A wait that
  // passes its bound stops the path: a late reply must never land in a buffer its caller has given up on.
  template <class Ready>
  Status wait_for(const char *call, const char *what, int pe, Ready ready) {
    const auto start = std::chrono::steady_clock::now();
    const auto bound = std::chrono::milliseconds(config_.timeout_ms);
    for (unsigned spins = 0;; ++spins) {
      // Checked after ready() too: a stopped path's counters read TSHMEMI_PROXY_STOPPED, which looks ready.
      const bool done = ready();
      if (failed_.load(std::memory_order_acquire)) return stopped_error(call);
      if (done) break;
      if (spins > 256) std::this_thread::yield();
      if ((spins & 1023u) == 1023u && std::chrono::steady_clock::now() - start > bound) {
        const std::string message = format("%s: PE %d waited %lld ms for %s%s and gives up (TSHMEM_PROXY_TIMEOUT_MS)%s",
                                           call, my_pe_, static_cast<long long>(config_.timeout_ms), what,
                                           pe >= 0 ? format(" (to PE %d)", pe).c_str() : "", waiting_on().c_str());
        record_failure(TSHMEM_ERR_TIMEOUT, message + "; the off-node path is stopped");
        return set_error(TSHMEM_ERR_TIMEOUT, "%s", message.c_str());
      }
    }
    return TSHMEM_SUCCESS;
  }

  // Which PEs this PE awaits replies from, or lacks credits for (for a timeout's message).
  std::string waiting_on() const {
    std::string replies, credits;
    int listed = 0;
    for (int pe = 0; pe < n_pes_ && listed < 8; ++pe)
      if (awaiting_[static_cast<size_t>(pe)].load(std::memory_order_relaxed) > 0) {
        replies += format("%s%d", replies.empty() ? "" : ", ", pe);
        ++listed;
      }
    const int blocked = credit_blocked_pe_.load(std::memory_order_relaxed);
    std::string out;
    if (!replies.empty()) out += "; awaiting replies from PE(s) " + replies;
    if (blocked >= 0) out += format("; PE %d has not handled this PE's earlier messages (no credits)", blocked);
    return out;
  }

  Status stopped_error(const char *call) {
    return set_error(failure_code(), "%s: the off-node path of PE %d has stopped: %s", call, my_pe_, failure().c_str());
  }

  std::string failure() {
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    return failure_;
  }
  Status failure_code() {
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    return failure_code_;
  }

  // The first failure wins: it is what every later call reports. Any thread may record one; only host memory is
  // written, so it works while the proxy thread is held in a CUDA call. Kernels waiting on a channel see the
  // stopped counters and tags, and print the text written before them.
  void record_failure(Status code, const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(refusal_mutex_);
      if (!failure_.empty()) return;
      failure_ = message;
      failure_code_ = code;
    }
    failed_.store(true, std::memory_order_release);  // before the stopped values, which look like completions
    TSHMEMI_LOG(kWarn, kLogInit, "off-node proxy stopped: %s", message.c_str());
    for (tshmemi_proxy_channel *ring : rings_) {
      if (ring == nullptr) continue;
      char *text = tshmemi_proxy_failure(ring, ring->capacity);
      const size_t n = std::min(message.size(), size_t{TSHMEMI_PROXY_FAILURE_BYTES - 1});
      std::memcpy(text, message.data(), n);
      text[n] = '\0';
      __atomic_thread_fence(__ATOMIC_RELEASE);  // the text before the values that make a waiter read it
      tshmemi_proxy_result *results = tshmemi_proxy_results(ring, ring->capacity);
      for (uint32_t i = 0; i < ring->capacity; ++i)
        __atomic_store_n(&results[i].tag, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
      __atomic_store_n(&ring->tail, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
      __atomic_store_n(&ring->done, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
    }
  }

  // A channel counter or result tag: never moved once the path has stopped (the stopped value is final).
  static void store_unless_stopped(uint64_t *word, uint64_t value) {
    uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    while (seen != TSHMEMI_PROXY_STOPPED &&
           !__atomic_compare_exchange_n(word, &seen, value, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
    }
  }

  void stop_thread() {
    if (!thread_.joinable()) return;
    command_.store(kStop, std::memory_order_release);
    thread_.join();
    {
      std::lock_guard<std::mutex> lock(watchdog_mutex_);
      watchdog_stop_ = true;
    }
    watchdog_wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

  // The watchdog: the proxy thread counts its passes; one that has not moved for the bound is held somewhere it
  // cannot leave by itself (a CUDA call waiting for a kernel that waits for this proxy), and only a stopped path
  // (written to host memory, which those kernels read) frees it.
  void watch() {
    const auto bound = bound_of(config_);
    uint64_t last = heartbeat_.load(std::memory_order_relaxed);
    Clock::time_point moved = Clock::now();
    std::unique_lock<std::mutex> lock(watchdog_mutex_);
    while (!watchdog_stop_) {
      watchdog_wake_.wait_for(lock, std::chrono::milliseconds(100));
      const uint64_t now = heartbeat_.load(std::memory_order_relaxed);
      if (now != last || failed_.load(std::memory_order_acquire)) {
        last = now;
        moved = Clock::now();
      } else if (Clock::now() - moved > bound) {
        record_failure(TSHMEM_ERR_TIMEOUT,
                       format("the off-node proxy thread of PE %d has not run for %lld ms (TSHMEM_PROXY_TIMEOUT_MS): "
                              "it is held, as in a CUDA call that waits for the device (cudaFree, a module load) "
                              "while a kernel waits for this proxy",
                              my_pe_, static_cast<long long>(bound.count())));
        moved = Clock::now();
      }
    }
  }

  // The bound of every wait that depends on another PE: a reply awaited, or credits, for longer stops the path.
  // Looked at every 10 ms.
  void check_waits() {
    const Clock::time_point now = Clock::now();
    if (now - last_check_ < std::chrono::milliseconds(10)) return;
    last_check_ = now;
    const auto bound = bound_of(config_);
    const Expected *oldest = nullptr;
    for (const Expected &e : expected_)
      if (e.id != 0 && (oldest == nullptr || e.since < oldest->since)) oldest = &e;
    if (oldest != nullptr && now - oldest->since > bound) {
      const char *what = oldest->kind == kFlushAck   ? "the acknowledgement of a quiet"
                         : oldest->kind == kAmoReply ? "the old value of a fetching atomic"
                         : oldest->tag != 0          ? "the value of a g"
                                                     : "the data of a get";
      record_failure(TSHMEM_ERR_TIMEOUT,
                     format("%s%s from PE %d has not come for %lld ms (TSHMEM_PROXY_TIMEOUT_MS); the off-node path of "
                            "PE %d is stopped",
                            oldest->kernel ? "for a kernel, " : "", what, oldest->pe,
                            static_cast<long long>(bound.count()), my_pe_));
      return;
    }
    const int blocked = credit_blocked_pe_.load(std::memory_order_relaxed);
    if (blocked >= 0 && now - credit_blocked_since_ > bound)
      record_failure(TSHMEM_ERR_TIMEOUT,
                     format("PE %d has not handled PE %d's messages for %lld ms (TSHMEM_PROXY_TIMEOUT_MS: no credits, "
                            "so nothing more goes out: the channels fill); the off-node path of PE %d is stopped",
                            blocked, my_pe_, static_cast<long long>(bound.count()), my_pe_));
  }

  // --- the proxy thread ---

  void run() {
    Status status = memory_->bind_thread();
    unsigned idle = 0;
    while (status == TSHMEM_SUCCESS && !failed_.load(std::memory_order_acquire)) {
      heartbeat_.fetch_add(1, std::memory_order_relaxed);
      check_waits();
      bool worked = false;
      status = poll_receives(&worked);
      if (status == TSHMEM_SUCCESS) status = serve_replies(&worked);
      if (status == TSHMEM_SUCCESS) status = advance(&worked);
      if (status == TSHMEM_SUCCESS) status = pump(&worked);
      if (status != TSHMEM_SUCCESS) break;
      const int command = command_.load(std::memory_order_acquire);
      if (command == kStop) return;
      if (command == kDrain && !busy_ && !drained_.load(std::memory_order_relaxed) && !visible(kDeviceRing) &&
          !visible(kHostRing)) {
        start(kInternal, 0, quiet_request());  // completes everything posted, then sets drained_
        worked = true;
      }
      // Busy polling keeps latency low; an idle proxy sleeps briefly so it does not take a core from the PEs.
      // (Shorter sleeps measured worse where cores are few: the waking proxies take them from the PEs.)
      idle = worked ? 0 : idle + 1;
      if (idle > kSpinsBeforeSleep) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (status != TSHMEM_SUCCESS) record_failure(status, last_error_message());
    if (!peer_gone_) tell_peers_stopped();
  }

  // Best effort: a PE whose notice cannot be sent at once learns of the failure by its own bound.
  void tell_peers_stopped() {
    for (int pe = 0; pe < n_pes_; ++pe) {
      if (pe == my_pe_) continue;
      Control &c = notice_slots_[static_cast<size_t>(pe)];
      c.wire = Wire();
      c.wire.kind = kGone;
      (void)msg_->isend(&c.wire, kHeader, pe, &c.request);
    }
  }

  static tshmemi_proxy_request quiet_request() {
    tshmemi_proxy_request request = {};
    request.op = TSHMEMI_PROXY_QUIET;
    return request;
  }

  // The next ticket to take from `ring`: the tail plus the requests taken whose slots are not freed yet.
  uint64_t next_ticket(int ring) const { return next_[ring]; }

  bool visible(int ring) const {
    const tshmemi_proxy_channel *channel = rings_[ring];
    const uint64_t ticket = next_ticket(ring);
    const tshmemi_proxy_request *slot =
        tshmemi_proxy_slots(const_cast<tshmemi_proxy_channel *>(channel)) + (ticket & (channel->capacity - 1));
    return __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == ticket + 1;
  }

  void start(int ring, uint64_t ticket, const tshmemi_proxy_request &request) {
    busy_ = true;
    ring_ = ring;
    ticket_ = ticket;
    request_ = request;
    progress_ = 0;
    signalled_ = false;
  }

  // Takes the next request: the rings alternate, except that a host QUIET waits for the device ring to
  // empty (the host's quiet covers what kernels posted before it, as the kernels have finished by then).
  bool take() {
    const bool device = visible(kDeviceRing), host = visible(kHostRing);
    if (!device && !host) return false;
    int ring =
        device && host ? (last_ring_ == kDeviceRing ? kHostRing : kDeviceRing) : (device ? kDeviceRing : kHostRing);
    tshmemi_proxy_channel *channel = rings_[ring];
    tshmemi_proxy_request *slot = tshmemi_proxy_slots(channel) + (next_[ring] & (channel->capacity - 1));
    if (ring == kHostRing && device && slot->op == TSHMEMI_PROXY_QUIET) {
      ring = kDeviceRing;
      channel = rings_[ring];
      slot = tshmemi_proxy_slots(channel) + (next_[ring] & (channel->capacity - 1));
    }
    last_ring_ = ring;
    start(ring, next_[ring]++, *slot);
    return true;
  }

  // The request's messages are assembled: its slot is freed once the last of them is handed to MPI (then
  // a put's source has been read) and, with a result slot, once its reader has taken the value. A refused
  // request gets no result, so nobody will take one: its slot is not held for it.
  void finish(bool refused = false) {
    busy_ = false;
    const bool result_slot = !refused && (request_.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT) != 0;
    if (ring_ != kInternal) taken_[ring_].push_back(Taken{ticket_, last_seq_, result_slot});
  }

  // Whether the reader of `ticket`'s result slot has taken its value.
  bool result_taken(int ring, uint64_t ticket) const {
    tshmemi_proxy_channel *channel = rings_[ring];
    const tshmemi_proxy_result *slot =
        tshmemi_proxy_results(channel, channel->capacity) + (ticket & (channel->capacity - 1));
    return __atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) == TSHMEMI_PROXY_RESULT_TAKEN(ticket);
  }

  void refuse(const char *rule) {
    const std::string message =
        format("off-node proxy of PE %d: request %llu refused: %s (op %u = %s, pe %d, remote %llu, bytes %llu)", my_pe_,
               static_cast<unsigned long long>(ticket_), rule, request_.op, op_name(request_.op), request_.pe,
               static_cast<unsigned long long>(request_.remote), static_cast<unsigned long long>(request_.bytes));
    TSHMEMI_LOG(kWarn, kLogInit, "%s", message.c_str());
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    last_refusal_ = message;
    ++refused_;
  }

  // Checks a request against the rules of its op; nullptr when it may go.
  const char *malformed(const tshmemi_proxy_request &r) const {
    if (r.op < TSHMEMI_PROXY_PUT || r.op > TSHMEMI_PROXY_QUIET) return "unknown op";
    if (r.op == TSHMEMI_PROXY_FENCE || r.op == TSHMEMI_PROXY_QUIET) return nullptr;
    if (r.pe < 0 || r.pe >= n_pes_) return "PE out of range";
    switch (r.op) {
      case TSHMEMI_PROXY_PUT_SIGNAL:
        if (!within(r.signal, 8, heap_bytes_) || r.signal % 8 != 0)
          return "signal word outside the heap or not 8-byte aligned";
        if (r.amo != TSHMEMI_PROXY_SIGNAL_SET && r.amo != TSHMEMI_PROXY_SIGNAL_ADD) return "unknown signal op";
        [[fallthrough]];
      case TSHMEMI_PROXY_PUT:
      case TSHMEMI_PROXY_GET:
        if (!within(r.remote, r.bytes, heap_bytes_)) return "remote range outside the symmetric heap";
        if ((r.flags & (TSHMEMI_PROXY_FLAG_INLINE | TSHMEMI_PROXY_FLAG_RESULT_SLOT)) && r.bytes > 8)
          return "inline or result-slot transfer of more than 8 bytes";
        if (r.bytes > 0 && r.local == 0 && !(r.flags & TSHMEMI_PROXY_FLAG_INLINE)) return "local address is NULL";
        return nullptr;
      case TSHMEMI_PROXY_SIGNAL:
        if (!within(r.remote, 8, heap_bytes_) || r.remote % 8 != 0)
          return "signal word outside the heap or not 8-byte aligned";
        if (r.amo != TSHMEMI_PROXY_SIGNAL_SET && r.amo != TSHMEMI_PROXY_SIGNAL_ADD) return "unknown signal op";
        return nullptr;
      case TSHMEMI_PROXY_AMO:
        if (r.width != 4 && r.width != 8) return "atomic width is not 4 or 8";
        if (!amo_kind::known(r.amo)) return "unknown atomic kind";
        if (!within(r.remote, r.width, heap_bytes_) || r.remote % r.width != 0)
          return "atomic word outside the heap or not aligned to its width";
        if (amo_kind::fetches(r.amo) && r.local == 0) return "fetching atomic without a result address";
        return nullptr;
    }
    return "unknown op";
  }

  // --- the outbox: messages in the order they go to MPI ---

  Status reap_sends() {
    for (size_t i = 0; i < in_flight_.size();) {
      bool done = false;
      TSHMEM_CHECK(msg_->test(&send_requests_[static_cast<size_t>(in_flight_[i])], &done));
      if (done) {
        free_.push_back(in_flight_[i]);
        in_flight_[i] = in_flight_.back();
        in_flight_.pop_back();
      } else {
        ++i;
      }
    }
    return TSHMEM_SUCCESS;
  }

  Status seal(Outgoing &o) {
    if (!o.open) return TSHMEM_SUCCESS;
    o.open = false;
    for (int lane : {kOriginLane, kTargetLane})
      if (o.copies[lane]) TSHMEM_CHECK(memory_->mark(static_cast<ProxyLane>(lane), &o.ready.lane[lane]));
    return TSHMEM_SUCCESS;
  }

  // Room for a record of `bytes` to `pe`: in the open batch to `pe` when it may join one, else in a new
  // message (nullptr while every send buffer is busy). The record then belongs to outbox_.back().
  Status open_record(int pe, size_t bytes, bool small, char **out) {
    *out = nullptr;
    if (small && !outbox_.empty()) {
      Outgoing &last = outbox_.back();
      if (last.open && last.batch && last.pe == pe && last.bytes + bytes <= batch_bytes_) {
        *out = send_[static_cast<size_t>(last.buffer)] + last.bytes;
        last.bytes += bytes;
        return TSHMEM_SUCCESS;
      }
    }
    if (free_.empty()) TSHMEM_CHECK(reap_sends());
    if (free_.empty()) return TSHMEM_SUCCESS;
    if (!outbox_.empty()) TSHMEM_CHECK(seal(outbox_.back()));
    Outgoing o;
    o.buffer = free_.back();
    free_.pop_back();
    o.pe = pe;
    o.bytes = bytes;
    o.seq = ++last_seq_;
    o.batch = small;
    outbox_.push_back(o);
    *out = send_[static_cast<size_t>(o.buffer)];
    return TSHMEM_SUCCESS;
  }

  bool passed(const Point &point, const bool copies[2], Status *status) {
    for (int lane : {kOriginLane, kTargetLane}) {
      if (!copies[lane]) continue;
      bool done = false;
      *status = memory_->passed(static_cast<ProxyLane>(lane), point.lane[lane], &done);
      if (*status != TSHMEM_SUCCESS || !done) return false;
    }
    return true;
  }

  // Hands sealed messages whose copies are complete to MPI, in order (up to one still being assembled).
  // Called as soon as a chunk is sealed too: where copies are the CPU's (host memory) the chunk is in MPI
  // before the next one is copied.
  Status send_ready(bool *worked) {
    Status status = TSHMEM_SUCCESS;
    while (!outbox_.empty()) {
      Outgoing &o = outbox_.front();
      if (o.open) break;
      if (!passed(o.ready, o.copies, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      // Out of credits: the target has not handled this PE's earlier messages yet. Messages go in order, so
      // the outbox waits (the target returns credits whatever this PE does).
      int &credits = credits_[static_cast<size_t>(o.pe)];
      if (credits == 0) {
        if (credit_blocked_pe_.load(std::memory_order_relaxed) != o.pe) credit_blocked_since_ = Clock::now();
        credit_blocked_pe_.store(o.pe, std::memory_order_relaxed);
        break;
      }
      credit_blocked_pe_.store(-1, std::memory_order_relaxed);
      --credits;
      TSHMEM_CHECK(msg_->isend(send_[static_cast<size_t>(o.buffer)], o.bytes, o.pe,
                               &send_requests_[static_cast<size_t>(o.buffer)]));
      in_flight_.push_back(o.buffer);
      sent_seq_ = o.seq;
      outbox_.pop_front();
      *worked = true;
    }
    return TSHMEM_SUCCESS;
  }

  // Seals what this pass assembled, hands what is ready to MPI, and frees the slots of requests whose
  // messages have all gone.
  Status pump(bool *worked) {
    if (!outbox_.empty()) TSHMEM_CHECK(seal(outbox_.back()));  // what this pass assembled goes now
    if (!owing_.empty()) TSHMEM_CHECK(return_credits());
    TSHMEM_CHECK(reap_sends());
    TSHMEM_CHECK(send_ready(worked));
    for (int ring : {kDeviceRing, kHostRing}) {
      std::deque<Taken> &taken = taken_[ring];
      const auto freeable = [&](const Taken &t) {
        return t.seq <= sent_seq_ && (!t.result_slot || result_taken(ring, t.ticket));
      };
      if (taken.empty() || !freeable(taken.front())) continue;
      uint64_t tail = 0;
      while (!taken.empty() && freeable(taken.front())) {
        tail = taken.front().ticket + 1;
        taken.pop_front();
      }
      store_unless_stopped(&rings_[ring]->tail, tail);
      *worked = true;
    }
    return TSHMEM_SUCCESS;
  }

  void mark_dirty(int pe) {
    if (!dirty_[static_cast<size_t>(pe)]) {
      dirty_[static_cast<size_t>(pe)] = 1;
      dirty_list_.push_back(pe);
    }
  }

  // A record without payload to `pe` (joins a batch); false while no send buffer is free.
  Status small_record(int pe, const Wire &wire, bool *placed) {
    char *record = nullptr;
    TSHMEM_CHECK(open_record(pe, kHeader, true, &record));
    *placed = record != nullptr;
    if (record != nullptr) std::memcpy(record, &wire, kHeader);
    return TSHMEM_SUCCESS;
  }

  // Takes requests and assembles their messages as far as send buffers and the reply limit allow.
  Status advance(bool *worked) {
    for (int takes = 0; takes < kTakesPerPass; ++takes) {
      if (!busy_) {
        if (!take()) return TSHMEM_SUCCESS;
        *worked = true;
        if (const char *rule = malformed(request_)) {
          refuse(rule);
          finish(true);
          continue;
        }
      }
      bool complete = false;
      TSHMEM_CHECK(step(&complete, worked));
      if (!complete) return TSHMEM_SUCCESS;
      finish();
    }
    return TSHMEM_SUCCESS;
  }

  // Moves the current request on; *complete once all its messages are assembled (a QUIET: once done).
  Status step(bool *complete, bool *worked) {
    const tshmemi_proxy_request &r = request_;
    bool placed = false;
    switch (r.op) {
      case TSHMEMI_PROXY_PUT:
      case TSHMEMI_PROXY_PUT_SIGNAL:
        while (progress_ < r.bytes) {
          const uint64_t piece = std::min<uint64_t>(config_.chunk_bytes, r.bytes - progress_);
          const bool small = piece <= kSmallPayload;
          char *record = nullptr;
          TSHMEM_CHECK(open_record(r.pe, kHeader + padded(piece), small, &record));
          if (record == nullptr) return TSHMEM_SUCCESS;
          Wire wire;
          wire.kind = kPut;
          wire.offset = r.remote + progress_;
          wire.bytes = piece;
          std::memcpy(record, &wire, kHeader);
          if (r.flags & TSHMEMI_PROXY_FLAG_INLINE) {
            std::memcpy(record + kHeader, &r.value, piece);
          } else {
            bool queued = false;
            TSHMEM_CHECK(memory_->copy(kOriginLane, record + kHeader,
                                       reinterpret_cast<const void *>(r.local + progress_), piece, &queued));
            outbox_.back().copies[kOriginLane] |= queued;
          }
          if (!small) {
            TSHMEM_CHECK(seal(outbox_.back()));
            TSHMEM_CHECK(send_ready(worked));
            TSHMEM_CHECK(reap_sends());  // MPI progresses the chunks in flight between two copies
          }
          progress_ += piece;
          mark_dirty(r.pe);
          *worked = true;
        }
        if (r.op == TSHMEMI_PROXY_PUT || signalled_) break;
        [[fallthrough]];
      case TSHMEMI_PROXY_SIGNAL: {
        Wire wire;
        wire.kind = kSignal;
        wire.amo = r.amo;
        wire.offset = r.op == TSHMEMI_PROXY_SIGNAL ? r.remote : r.signal;
        wire.value = r.value;
        TSHMEM_CHECK(small_record(r.pe, wire, &placed));
        if (!placed) return TSHMEM_SUCCESS;
        signalled_ = true;
        mark_dirty(r.pe);
        *worked = true;
        break;
      }
      case TSHMEMI_PROXY_AMO: {
        const bool fetching = amo_kind::fetches(r.amo);
        if (fetching && free_expected_.empty()) return TSHMEM_SUCCESS;
        Wire wire;
        wire.kind = kAmo;
        wire.amo = r.amo;
        wire.width = r.width;
        wire.offset = r.remote;
        wire.value = r.value;
        wire.compare = r.compare;
        wire.id = fetching ? peek_expected_id() : 0;
        TSHMEM_CHECK(small_record(r.pe, wire, &placed));
        if (!placed) return TSHMEM_SUCCESS;
        if (fetching) expect(r.pe, kAmoReply, r.local, r.width, result_tag(r));
        mark_dirty(r.pe);
        *worked = true;
        break;
      }
      case TSHMEMI_PROXY_GET:
        while (progress_ < r.bytes) {
          if (free_expected_.empty()) return TSHMEM_SUCCESS;
          const uint64_t piece = std::min<uint64_t>(config_.chunk_bytes, r.bytes - progress_);
          Wire wire;
          wire.kind = kGet;
          wire.offset = r.remote + progress_;
          wire.bytes = piece;
          wire.id = peek_expected_id();
          TSHMEM_CHECK(small_record(r.pe, wire, &placed));
          if (!placed) return TSHMEM_SUCCESS;
          expect(r.pe, kGetReply, r.local + progress_, piece, result_tag(r));
          progress_ += piece;
          *worked = true;
        }
        break;
      case TSHMEMI_PROXY_FENCE: break;  // messages to one PE apply in the order sent: every put is already fenced
      case TSHMEMI_PROXY_QUIET:
        while (!dirty_list_.empty()) {
          if (free_expected_.empty()) return TSHMEM_SUCCESS;
          const int pe = dirty_list_.back();
          Wire wire;
          wire.kind = kFlush;
          wire.id = peek_expected_id();
          TSHMEM_CHECK(small_record(pe, wire, &placed));
          if (!placed) return TSHMEM_SUCCESS;
          expect(pe, kFlushAck, 0, 0, 0);
          dirty_list_.pop_back();
          dirty_[static_cast<size_t>(pe)] = 0;
          *worked = true;
        }
        if (pending() > 0) return TSHMEM_SUCCESS;
        if (ring_ == kInternal)
          drained_.store(true, std::memory_order_release);
        else
          store_unless_stopped(&rings_[ring_]->done, ticket_ + 1);
        break;
    }
    *complete = true;
    return TSHMEM_SUCCESS;
  }

  // --- arrivals ---

  Status post_receive(int buffer) {
    TSHMEM_CHECK(
        msg_->irecv(recv_[static_cast<size_t>(buffer)], capacity_, &recv_requests_[static_cast<size_t>(buffer)]));
    posted_.push_back(buffer);
    return TSHMEM_SUCCESS;
  }

  // Handles arrived messages in the order MPI matched them; a buffer goes back to MPI once the copies out
  // of it have completed (in arrival order: each lane completes in order).
  Status poll_receives(bool *worked) {
    for (int handled = 0; !posted_.empty() && handled < kProxyRecvBuffers; ++handled) {
      const int buffer = posted_.front();
      bool done = false;
      int source = -1;
      size_t bytes = 0;
      TSHMEM_CHECK(msg_->test(&recv_requests_[static_cast<size_t>(buffer)], &done, &source, &bytes));
      if (!done) break;
      posted_.pop_front();
      arrived_.emplace_back();
      Arrived &a = arrived_.back();
      a.buffer = buffer;
      const size_t first_reply = fresh_replies_.size();
      bool control = false;
      TSHMEM_CHECK(handle(source, recv_[static_cast<size_t>(buffer)], bytes, &a, &control));
      if (!control && source >= 0 && source < n_pes_) owe_credit(source);
      for (int lane : {kOriginLane, kTargetLane})
        if (a.copies[lane]) TSHMEM_CHECK(memory_->mark(static_cast<ProxyLane>(lane), &a.ready.lane[lane]));
      for (size_t i = first_reply; i < fresh_replies_.size(); ++i) {
        fresh_replies_[i].ready = a.ready;
        replies_.push_back(fresh_replies_[i]);
      }
      fresh_replies_.clear();
      *worked = true;
    }
    Status status = TSHMEM_SUCCESS;
    while (!arrived_.empty()) {
      Arrived &a = arrived_.front();
      if (!passed(a.ready, a.copies, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      for (const Expected &e : a.results) {
        tag_result(e);
        release_expected(e.id);
      }
      TSHMEM_CHECK(post_receive(a.buffer));
      arrived_.pop_front();
      *worked = true;
    }
    return TSHMEM_SUCCESS;
  }

  void refuse_message(int source, const Wire &wire, const char *rule) {
    const std::string message = format(
        "off-node proxy of PE %d: message from PE %d refused: %s (kind %u, offset %llu, bytes %llu)", my_pe_, source,
        rule, wire.kind, static_cast<unsigned long long>(wire.offset), static_cast<unsigned long long>(wire.bytes));
    TSHMEMI_LOG(kWarn, kLogInit, "%s", message.c_str());
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    last_refusal_ = message;
    ++refused_;
  }

  // Applies the records of one message in order. *control: it was a control message (credits, a stop notice),
  // which costs its sender no credit.
  Status handle(int source, const char *message, size_t bytes, Arrived *a, bool *control) {
    *control = false;
    if (bytes == kHeader) {
      Wire wire;
      std::memcpy(&wire, message, kHeader);
      if (wire.kind == kCredit || wire.kind == kGone) {
        *control = true;
        return handle_control(source, wire);
      }
    }
    size_t at = 0;
    while (at < bytes) {
      Wire wire;
      if (bytes - at < kHeader) {
        refuse_message(source, wire, "record shorter than a header");
        return TSHMEM_SUCCESS;
      }
      std::memcpy(&wire, message + at, kHeader);
      const uint64_t payload = carries_payload(wire.kind) ? wire.bytes : 0;
      if (payload > bytes - at - kHeader) {
        refuse_message(source, wire, "record longer than its message");
        return TSHMEM_SUCCESS;
      }
      TSHMEM_CHECK(handle_record(source, wire, message + at, a));
      at += std::min<size_t>(bytes - at, kHeader + padded(payload));
    }
    return TSHMEM_SUCCESS;
  }

  Status handle_record(int source, const Wire &wire, const char *record, Arrived *a) {
    const char *payload = record + kHeader;
    Reply reply{source, Wire(), Point()};
    switch (wire.kind) {
      case kPut:
        if (!within(wire.offset, wire.bytes, heap_bytes_)) {
          refuse_message(source, wire, "put outside the heap");
          return TSHMEM_SUCCESS;
        }
        TSHMEM_CHECK(memory_->apply_put(heap_ + wire.offset, payload, wire.bytes));
        a->copies[kTargetLane] = true;
        return TSHMEM_SUCCESS;
      case kSignal:
        if (!within(wire.offset, 8, heap_bytes_) || wire.offset % 8 != 0 ||
            (wire.amo != TSHMEMI_PROXY_SIGNAL_SET && wire.amo != TSHMEMI_PROXY_SIGNAL_ADD)) {
          refuse_message(source, wire, "signal outside the heap, misaligned or of an unknown kind");
          return TSHMEM_SUCCESS;
        }
        // SET is a store (no kernel on a GPU); ADD is an atomic.
        if (wire.amo == TSHMEMI_PROXY_SIGNAL_SET)
          TSHMEM_CHECK(memory_->apply_store(heap_ + wire.offset, record + offsetof(Wire, value), 8));
        else
          TSHMEM_CHECK(memory_->apply_amo(heap_ + wire.offset, TSHMEMI_AMO_ADD, 8, wire.value, 0, nullptr, false));
        a->copies[kTargetLane] = true;
        return TSHMEM_SUCCESS;
      case kAmo: {
        const bool fetching = wire.id != 0;
        if ((wire.width == 4 || wire.width == 8) && amo_kind::known(wire.amo) &&
            within(wire.offset, wire.width, heap_bytes_) && wire.offset % wire.width == 0) {
          // A fetched value goes to a slot of its own and is sent once the atomic is done; with every slot
          // taken (as many unserved fetches), the thread waits for this one, in the spare slot at the end.
          uint64_t *old = nullptr;
          bool wait = false;
          if (fetching && amo_issued_ - amo_served_ < kAmoSlots) {
            old = amo_slots_ + amo_issued_++ % kAmoSlots;
            reply.value_at = old;
          } else if (fetching) {
            old = amo_slots_ + kAmoSlots;
            wait = true;
          }
          TSHMEM_CHECK(
              memory_->apply_amo(heap_ + wire.offset, wire.amo, wire.width, wire.value, wire.compare, old, wait));
          if (wait) reply.wire.value = *old;
          a->copies[kTargetLane] = true;
        } else {
          refuse_message(source, wire, "atomic outside the heap, misaligned or of an unknown kind");
        }
        if (!fetching) return TSHMEM_SUCCESS;
        reply.wire.kind = kAmoReply;
        reply.wire.width = wire.width;
        reply.wire.id = wire.id;
        break;
      }
      case kGet:
        reply.wire.kind = kGetReply;
        reply.wire.id = wire.id;
        if (within(wire.offset, wire.bytes, heap_bytes_) && wire.bytes <= config_.chunk_bytes) {
          reply.wire.offset = wire.offset;
          reply.wire.bytes = wire.bytes;
        } else {
          refuse_message(source, wire, "get outside the heap or larger than a chunk");  // replied to, empty
        }
        break;
      case kFlush:
        reply.wire.kind = kFlushAck;
        reply.wire.id = wire.id;
        a->copies[kTargetLane] = true;  // acknowledged once everything applied before it is in the heap
        break;
      case kGetReply:
      case kAmoReply:
      case kFlushAck: {
        // Only a reply this PE awaits is taken, and its data goes where this PE's table says.
        const Expected *e = match_reply(source, wire);
        if (e == nullptr) {
          refuse_message(source, wire, "a reply that matches no request in flight (its id, PE, kind or size)");
          return TSHMEM_SUCCESS;
        }
        if (wire.kind == kFlushAck) {
          release_expected(e->id);
          return TSHMEM_SUCCESS;
        }
        // A get the target refused comes back empty: nothing to copy, and the wait still ends.
        const uint64_t data_bytes = wire.kind == kGetReply ? wire.bytes : e->bytes;
        const void *data = wire.kind == kGetReply ? static_cast<const void *>(payload)
                                                  : static_cast<const void *>(record + offsetof(Wire, value));
        if (data_bytes > 0) {
          // From the message buffer itself: it stays put until the copy is complete.
          bool queued = false;
          TSHMEM_CHECK(memory_->copy(kOriginLane, reinterpret_cast<void *>(e->token), data, data_bytes, &queued));
          a->copies[kOriginLane] |= queued;
        }
        a->results.push_back(*e);
        return TSHMEM_SUCCESS;
      }
      default: refuse_message(source, wire, "unknown message kind"); return TSHMEM_SUCCESS;
    }
    fresh_replies_.push_back(reply);
    return TSHMEM_SUCCESS;
  }

  // A result slot (host memory a kernel polls): the value is written; now its tag, with release order.
  static void tag_result(const Expected &e) {
    if (e.tag != 0) store_unless_stopped(reinterpret_cast<uint64_t *>(e.token + 8), e.tag);
  }

  // --- the replies this PE awaits ---

  int pending() const { return kProxyMaxPending - static_cast<int>(free_expected_.size()); }
  static uint64_t result_tag(const tshmemi_proxy_request &r, uint64_t ticket) {
    return (r.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT) ? ticket + 1 : 0;
  }
  uint64_t result_tag(const tshmemi_proxy_request &r) const { return result_tag(r, ticket_); }

  // The id the next expect() hands out (the caller checked that an entry is free): the entry's index in the
  // low bits, a count above them, so that a stale or forged id does not match a reused entry.
  uint64_t peek_expected_id() const {
    return ((expected_serial_ + 1) * kProxyMaxPending) | static_cast<uint64_t>(free_expected_.back());
  }

  void expect(int pe, uint32_t kind, uint64_t token, uint64_t bytes, uint64_t tag) {
    const int index = free_expected_.back();
    free_expected_.pop_back();
    Expected &e = expected_[index];
    e.id = (++expected_serial_ * kProxyMaxPending) | static_cast<uint64_t>(index);
    e.pe = pe;
    e.kind = kind;
    e.token = token;
    e.bytes = bytes;
    e.tag = tag;
    e.kernel = ring_ == kDeviceRing;
    e.since = Clock::now();
    awaiting_[static_cast<size_t>(pe)].fetch_add(1, std::memory_order_relaxed);
  }

  const Expected *match_reply(int source, const Wire &wire) const {
    if (wire.id == 0) return nullptr;
    const Expected &e = expected_[wire.id & (kProxyMaxPending - 1)];
    if (e.id != wire.id || e.pe != source || e.kind != wire.kind) return nullptr;
    if (wire.kind == kGetReply && wire.bytes != e.bytes && wire.bytes != 0) return nullptr;
    if (wire.kind == kAmoReply && wire.width != e.bytes) return nullptr;
    return &e;
  }

  void release_expected(uint64_t id) {
    Expected &e = expected_[id & (kProxyMaxPending - 1)];
    if (e.id != id) return;
    awaiting_[static_cast<size_t>(e.pe)].fetch_sub(1, std::memory_order_relaxed);
    e = Expected();
    free_expected_.push_back(static_cast<int>(id & (kProxyMaxPending - 1)));
  }

  // --- flow control and control messages ---

  // One more message of `source` handled: its credit goes back once enough are owed.
  void owe_credit(int source) {
    if (source == my_pe_) {  // a message to this PE itself: its credit comes back at once
      ++credits_[static_cast<size_t>(source)];
      return;
    }
    if (++owed_[static_cast<size_t>(source)] == kCreditReturn) owing_.push_back(source);
  }

  // Sends the credits owed to each PE whose control slot is free (the rest go on a later pass).
  Status return_credits() {
    for (size_t i = 0; i < owing_.size();) {
      const int pe = owing_[i];
      Control &c = credit_slots_[static_cast<size_t>(pe)];
      bool done = false;
      TSHMEM_CHECK(msg_->test(&c.request, &done));
      if (!done) {
        ++i;
        continue;
      }
      c.wire = Wire();
      c.wire.kind = kCredit;
      c.wire.value = static_cast<uint64_t>(owed_[static_cast<size_t>(pe)]);
      owed_[static_cast<size_t>(pe)] = 0;
      TSHMEM_CHECK(msg_->isend(&c.wire, kHeader, pe, &c.request));
      owing_[i] = owing_.back();
      owing_.pop_back();
    }
    return TSHMEM_SUCCESS;
  }

  Status handle_control(int source, const Wire &wire) {
    if (source < 0 || source >= n_pes_ || source == my_pe_) return TSHMEM_SUCCESS;
    if (wire.kind == kGone) {
      peer_gone_ = true;  // it told every PE itself
      record_failure(TSHMEM_ERR_MPI, format("the off-node proxy of PE %d stopped (its log says why)", source));
      return TSHMEM_SUCCESS;
    }
    int &credits = credits_[static_cast<size_t>(source)];
    const uint64_t returned = std::min<uint64_t>(wire.value, kProxyCreditsPerPeer);
    credits = std::min(kProxyCreditsPerPeer, credits + static_cast<int>(returned));
    return TSHMEM_SUCCESS;
  }

  // Replies join the outbox once what they wait for is in the heap; a get's data is read on the target
  // lane, after every put applied before it.
  Status serve_replies(bool *worked) {
    Status status = TSHMEM_SUCCESS;
    const bool target_copy[2] = {false, true};
    while (!replies_.empty()) {
      const Reply &reply = replies_.front();
      if (!passed(reply.ready, target_copy, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      const size_t payload = reply.wire.kind == kGetReply ? reply.wire.bytes : 0;
      const bool small = payload <= kSmallPayload;
      char *record = nullptr;
      TSHMEM_CHECK(open_record(reply.pe, kHeader + padded(payload), small, &record));
      if (record == nullptr) break;
      Wire wire = reply.wire;
      if (reply.value_at != nullptr) {
        wire.value = *reply.value_at;
        ++amo_served_;  // slots are taken and served in this queue's order
      }
      std::memcpy(record, &wire, kHeader);
      if (payload > 0) {
        bool queued = false;
        TSHMEM_CHECK(memory_->copy(kTargetLane, record + kHeader, heap_ + reply.wire.offset, payload, &queued));
        outbox_.back().copies[kTargetLane] |= queued;
      }
      replies_.pop_front();
      if (!small) {
        TSHMEM_CHECK(seal(outbox_.back()));
        TSHMEM_CHECK(send_ready(worked));
        TSHMEM_CHECK(reap_sends());
      }
      *worked = true;
    }
    return TSHMEM_SUCCESS;
  }

  Bootstrap &boot_;
  char *heap_;
  uint64_t heap_bytes_;
  ProxyConfig config_;
  size_t capacity_;     ///< bytes of each send and receive buffer: a header and a chunk
  size_t batch_bytes_;  ///< most bytes of a batch of small records
  int my_pe_, n_pes_;
  std::unique_ptr<Messenger> msg_;
  std::unique_ptr<ProxyMemory> memory_;
  tshmemi_proxy_channel *rings_[2] = {nullptr, nullptr};
  tshmemi_proxy_device_side *device_side_ = nullptr;  ///< owned by memory_ (device memory), nullptr on shm
  uint64_t next_[2] = {0, 0};                         ///< the next ticket to take from each ring
  std::deque<Taken> taken_[2];                        ///< taken tickets whose slots are not freed yet, per ring

  std::vector<char *> send_, recv_;
  std::vector<Messenger::Request> send_requests_, recv_requests_;
  std::vector<int> free_;       ///< send buffers not in use
  std::vector<int> in_flight_;  ///< send buffers handed to MPI
  std::deque<Outgoing> outbox_;
  uint64_t last_seq_ = 0, sent_seq_ = 0;
  std::deque<int> posted_;  ///< receive buffers in the order they were posted (= the order MPI fills them)
  std::deque<Arrived> arrived_;
  std::deque<Reply> replies_;
  std::vector<Reply> fresh_replies_;  ///< made by the message being handled
  std::vector<uint8_t> dirty_;        ///< PEs written since the last QUIET
  std::vector<int> dirty_list_;
  Expected expected_[kProxyMaxPending];  ///< the replies this PE awaits
  std::vector<int> free_expected_;       ///< free entries of expected_
  uint64_t expected_serial_ = 0;         ///< counts entries handed out (the high bits of their ids)
  std::vector<int> credits_;             ///< messages this PE may still send to each PE (flow control)
  std::vector<int> owed_;                ///< messages handled from each PE whose credit is not returned yet
  std::vector<int> owing_;               ///< PEs owed at least kCreditReturn
  std::vector<Control> credit_slots_;    ///< per PE: credits returned to it
  std::vector<Control> notice_slots_;    ///< per PE: the stop notice
  bool peer_gone_ = false;               ///< stopped because another PE's proxy did (no notice of our own)
  /// For a timeout's message, read by the waiting thread: replies awaited per PE, the PE out of credits.
  std::vector<std::atomic<uint32_t>> awaiting_;
  std::atomic<int> credit_blocked_pe_{-1};
  Clock::time_point credit_blocked_since_;  ///< when the outbox last found credit_blocked_pe_ out of credits
  Clock::time_point last_check_;            ///< of check_waits
  std::atomic<uint64_t> heartbeat_{0};      ///< the proxy thread's passes, for the watchdog
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  bool watchdog_stop_ = false;
  uint64_t *amo_slots_ = nullptr;  ///< kAmoSlots fetched values being written, and a spare (staging memory)
  uint64_t amo_issued_ = 0, amo_served_ = 0;

  // The request in progress (the proxy thread's only).
  bool busy_ = false, signalled_ = false;
  int ring_ = 0, last_ring_ = kHostRing;
  uint64_t ticket_ = 0, progress_ = 0;
  tshmemi_proxy_request request_ = {};

  std::thread thread_;
  std::atomic<int> command_{kRun};
  std::atomic<bool> drained_{false};
  std::atomic<bool> failed_{false};
  std::mutex refusal_mutex_;  ///< guards the refusals and the failure
  std::string last_refusal_, failure_;
  Status failure_code_ = TSHMEM_SUCCESS;
  uint64_t refused_ = 0;
};

}  // namespace

uint64_t proxy_staging_bytes(const ProxyConfig &config) {
  const uint64_t buffers = uint64_t{kProxySendBuffers + kProxyRecvBuffers} * (kHeader + padded(config.chunk_bytes));
  const uint64_t rings = 2 * uint64_t{TSHMEMI_PROXY_CHANNEL_BYTES(config.ring_entries)};
  return buffers + rings + (kAmoSlots + 1) * sizeof(uint64_t);
}

uint64_t proxy_reply_queue_bytes(int n_pes) {
  return uint64_t{static_cast<uint64_t>(n_pes)} * kProxyMaxPending * sizeof(Reply);
}

Status make_proxy(Bootstrap &boot, MemBackend &mem, uint64_t heap_bytes, const ProxyConfig &config, int cuda_device,
                  std::unique_ptr<Proxy> *out, std::string *unavailable) {
  out->reset();
  // Every PE sizes its receive buffers for the largest message any PE sends: the chunk size must agree.
  const int64_t chunk = static_cast<int64_t>(config.chunk_bytes);
  int64_t lowest = 0, highest = 0;
  TSHMEM_CHECK(boot.allreduce(&chunk, &lowest, 1, ReduceOp::kMin));
  TSHMEM_CHECK(boot.allreduce(&chunk, &highest, 1, ReduceOp::kMax));
  if (lowest != highest)
    return set_error(TSHMEM_ERR_CONFIG, "tshmem_init: TSHMEM_PROXY_CHUNK differs between PEs (%lld and %lld bytes)",
                     static_cast<long long>(lowest), static_cast<long long>(highest));
  std::unique_ptr<Messenger> messenger;
  TSHMEM_CHECK(make_mpi_messenger(boot, &messenger, unavailable));
  if (!messenger) return TSHMEM_SUCCESS;
  std::unique_ptr<ProxyMemory> memory;
  Status local = TSHMEM_SUCCESS;
#if TSHMEM_HAVE_CUDA
  if (cuda_device >= 0) local = make_gpu_proxy_memory(cuda_device, &memory);
#else
  (void)cuda_device;
#endif
  if (local == TSHMEM_SUCCESS && !memory) local = make_host_proxy_memory(&memory);
  auto proxy = std::make_unique<ProxyEngine>(boot, mem, heap_bytes, config);
  if (local == TSHMEM_SUCCESS) local = proxy->create(std::move(messenger), std::move(memory));
  const Status agreed = agree_on_status(boot, local, "tshmem_init: starting the off-node proxy");
  if (agreed != TSHMEM_SUCCESS) return agreed;  // nothing was posted: each proxy stops on its own
  *out = std::move(proxy);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
