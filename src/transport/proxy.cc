// The off-node proxy engine: one thread per PE that drains this PE's channels (requests from kernels and from host
// calls, channel_reader.h), checks each request (wire.h) and hands it to the transport as its operations
// (transport.h). It owns no wire format: the transport chosen at init (TSHMEM_REMOTE_TRANSPORT, the table of
// transport.h) moves the operations, and the proxy thread drives its progress. Host calls are served on the
// calling thread where the transport can (HostRma), else posted to the host channel.
// Bounds and failure: the proxy keeps the bound of every wait on it (TSHMEM_PROXY_TIMEOUT_MS, or the smaller
// TSHMEM_WAIT_TIMEOUT_MS): a reply awaited, or credits from a PE, for longer stops the off-node path (the transport
// says what it has awaited too long), and so does a transport error or a host call that waited longer; a watchdog
// thread stops it when the proxy thread itself has not run for that long (held in a CUDA call). Stopping writes the
// message into both channels, stores TSHMEMI_PROXY_STOPPED in their counters and result tags (a kernel's wait ends
// there and traps with the message), tells every other PE's proxy (which stops too: the off-node path is one
// thing), and every later host call fails at once with the reason.
#include "transport/proxy.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/agree.h"
#include "bootstrap/bounded_wait.h"
#include "transport/channel_reader.h"
#include "transport/proxy_memory.h"
#include "transport/staged/staged_transport.h"
#include "transport/transport.h"
#include "transport/wire.h"

namespace tshmemi {
namespace {

using Clock = std::chrono::steady_clock;

class ProxyEngine final : public Proxy, private TransportSink, private WaitProgress {
 public:
  ProxyEngine(Bootstrap &boot, MemBackend &mem, uint64_t heap_bytes, const ProxyConfig &config)
      : boot_(boot),
        heap_(static_cast<char *>(mem.local_base())),
        heap_bytes_(heap_bytes),
        config_(config),
        my_pe_(boot.rank()),
        n_pes_(boot.size()) {}

  ~ProxyEngine() override {
    if (waits_progress_) set_wait_progress(nullptr);
    boot_.on_failure(nullptr);
    stop_thread();
    transport_.reset();  // before the channels and the memory both live in
    reader_.reset();
  }

  /// Collective: makes the transport `entry` over this PE's channels and memory; *unavailable when it cannot
  /// start here (the same on every PE), the thread started otherwise.
  Status create(const TransportEntry &entry, TransportInputs in, std::unique_ptr<ProxyMemory> *memory,
                std::string *unavailable) {
    if (!memory_) {
      memory_ = std::move(*memory);
      reader_ = std::make_unique<ChannelReader>(*memory_);
      TSHMEM_CHECK(reader_->create(config_.ring_entries, config_.stage_max, my_pe_));
      staged_gets_.assign(reader_->channel(ChannelReader::kDevice)->capacity, StagedGet());
    }
    in.heap = heap_;
    in.heap_bytes = heap_bytes_;
    in.chunk_bytes = config_.chunk_bytes;
    in.timeout_ms = bound_of(config_).count();
    in.memory = memory_.get();
    in.sink = this;
    TSHMEM_CHECK(entry.make(in, &transport_, unavailable));
    if (!transport_) return TSHMEM_SUCCESS;
    name_ = entry.name;
    host_ = transport_->host_rma();
    // The job's collectives failing (a PE stopped or gone, bootstrap.h) stops the off-node path too: one failed state.
    boot_.on_failure([this](Status code, const std::string &message) { record_failure(code, message); });
    thread_ = std::thread([this] { run(); });
    watchdog_ = std::thread([this] { watch(); });
    // tshmem's own waits on other PEs (bounded_wait.h, and the host's waits on heap words) progress the transport.
    set_wait_progress(this);
    waits_progress_ = true;
    return TSHMEM_SUCCESS;
  }

  bool started() const { return transport_ != nullptr; }
  void set_choice_note(const std::string &note) { choice_note_ = note; }
  const std::string &choice_note() const override { return choice_note_; }
  const std::string &transport_name() const override { return name_; }
  std::string path_of(int pe) const override { return transport_ ? transport_->path_of(pe) : std::string(); }

  // --- host calls (any application thread) ---

  Status put(uint64_t heap_offset, const void *src, size_t bytes, int pe) override {
    if (host_ != nullptr)
      return direct("tshmem_putmem", pe, [&] { return host_->put("tshmem_putmem", pe, heap_offset, src, bytes); });
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host("tshmem_putmem", transfer(TSHMEMI_PROXY_PUT, heap_offset, src, bytes, pe), &ticket));
    return wait_for("tshmem_putmem", "its off-node proxy to take the put", pe,
                    [&] { return tshmemi_proxy_taken(host_ring(), ticket); });
  }

  Status get(void *dst, uint64_t heap_offset, size_t bytes, int pe) override {
    if (host_ != nullptr)
      return direct("tshmem_getmem", pe, [&] { return host_->get("tshmem_getmem", pe, heap_offset, dst, bytes); });
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host("tshmem_getmem", transfer(TSHMEMI_PROXY_GET, heap_offset, dst, bytes, pe), &ticket));
    return quiet_ring("tshmem_getmem", pe);
  }

  Status put_signal(const char *call, uint64_t heap_offset, const void *src, size_t bytes, uint64_t signal_offset,
                    uint64_t value, unsigned signal_op, int pe) override {
    tshmemi_proxy_request request = transfer(TSHMEMI_PROXY_PUT_SIGNAL, heap_offset, src, bytes, pe);
    request.amo = static_cast<uint8_t>(signal_op);
    request.value = value;
    request.signal = signal_offset;
    if (host_ != nullptr)
      return direct(call, pe, [&] { return host_->put_signal(call, wire::put_of(request), wire::signal_of(request)); });
    // Through the host channel: the data is read before the proxy takes the request, and the call returns once
    // the signal is complete at the target (a blocking put with signal delivers both).
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host(call, request, &ticket));
    return quiet_ring(call, pe);
  }

  Status quiet() override {
    if (host_ != nullptr && device_channel_issued()) {
      // Host calls went out on their own threads and every request of the device channel posted so far has been
      // issued: one flush on this thread completes them all, without the proxy thread's hop.
      return direct("tshmem_quiet", -1, [&] { return host_->quiet("tshmem_quiet"); });
    }
    return quiet_ring("tshmem_quiet", -1);
  }
  Status sync() override { return TSHMEM_SUCCESS; }  // the target's proxy applied and settled before acking

  Status destroy() override {
    if (!thread_.joinable()) return TSHMEM_SUCCESS;
    // Everything posted here completes at its target; then no PE sends any more once all are past the barrier,
    // and each proxy may stop. A path that has stopped is not drained: what was posted and not complete is lost,
    // and finalize says so.
    Status drained = TSHMEM_SUCCESS;
    if (!failed_.load(std::memory_order_acquire) && !boot_.failed()) {
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
    set_wait_progress(nullptr);  // past the barrier no PE sends to this one any more
    waits_progress_ = false;
    stop_thread();
    // A failure another thread recorded after the proxy thread's last look is abandoned here.
    if (failed_.load(std::memory_order_acquire)) transport_->abandon(failure());
    transport_->close();
    if (drained != TSHMEM_SUCCESS) return drained;
    return barrier;
  }

  tshmemi_proxy_channel *device_channel() override { return reader_->channel(ChannelReader::kDevice); }
  tshmemi_proxy_device_side *device_side() override { return reader_->device_side(); }

  uint64_t refused(std::string *last) override {
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    if (last != nullptr) *last = last_refusal_;
    return refused_;
  }

  Status send_unsolicited_reply(int pe, uint64_t id, uint64_t bytes) override {
    std::vector<char> message(wire::record_bytes(bytes), 0x5a);
    wire::write(message.data(), wire::get_reply(id, 0, bytes));
    return transport_->send_raw(pe, message.data(), message.size());
  }

 private:
  // A thread waiting on other PEs, between its polls (WaitProgress): the transport's progress from that thread,
  // while the path runs; once it has stopped, what carries the stop notice to the other PEs (finalize's barrier
  // waits for a stopped peer that may yet continue and read it).
  void progress_while_waiting() override {
    if (!failed_.load(std::memory_order_relaxed))
      transport_->progress_from_waiter();
    else
      transport_->progress_after_stop();
  }

  enum Command { kRun, kDrain, kStop };
  /// The request in progress comes from no channel: the drain's QUIET.
  static constexpr int kInternal = -1;
  /// Requests taken from the channels in one pass before the thread turns to the transport again.
  static constexpr int kTakesPerPass = 256;
  /// Idle passes (each polls both channels and the transport) before the thread starts to sleep between passes.
  static constexpr unsigned kSpinsBeforeSleep = 2048;
  /// Idle passes after work that only arrived (no request taken) before the pause, where the transport wakes the
  /// thread on arrival (Transport::wakes_on_arrival): woken for every arrival, a thread that then spun 2048 passes
  /// would take cores from the PEs it serves.
  static constexpr unsigned kSpinsAfterArrival = 64;
  /// The pause of an idle thread: the first, and the longest it grows to where it may grow (run()).
  static constexpr std::chrono::microseconds kPause{50}, kLongestPause{1000};
  /// How long the channels must have been empty before the pause grows: a program that posts requests now and
  /// then (a benchmark's rows, a kernel's steps) keeps the short pause.
  static constexpr std::chrono::milliseconds kChannelsQuiet{100};

  /// How long anything may wait on the proxy: TSHMEM_PROXY_TIMEOUT_MS, or TSHMEM_WAIT_TIMEOUT_MS when smaller.
  static std::chrono::milliseconds bound_of(const ProxyConfig &config) {
    int64_t ms = config.timeout_ms;
    if (config.device_wait_timeout_ms > 0) ms = std::min(ms, config.device_wait_timeout_ms);
    return std::chrono::milliseconds(ms);
  }

  static tshmemi_proxy_request transfer(unsigned op, uint64_t heap_offset, const void *local, size_t bytes, int pe) {
    tshmemi_proxy_request request = {};
    request.op = static_cast<uint8_t>(op);
    request.pe = pe;
    request.remote = heap_offset;
    request.local = reinterpret_cast<uint64_t>(local);
    request.bytes = bytes;
    return request;
  }

  static tshmemi_proxy_request quiet_request() {
    tshmemi_proxy_request request = {};
    request.op = TSHMEMI_PROXY_QUIET;
    return request;
  }

  tshmemi_proxy_channel *host_ring() { return reader_->channel(ChannelReader::kHost); }

  // Whether every request posted to the device channel so far has been issued to the transport (taken and
  // released). Knowable only where producers count tickets in host memory (no GPU: the tests' CPU producers);
  // kernels count in device memory, and then the answer is no.
  bool device_channel_issued() {
    tshmemi_proxy_channel *ring = reader_->channel(ChannelReader::kDevice);
    if (ring->head_ptr != &ring->head) return false;
    const uint64_t posted = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) >= posted;
  }

  Status quiet_ring(const char *call, int pe) {
    uint64_t ticket = 0;
    TSHMEM_CHECK(post_host(call, quiet_request(), &ticket));
    return wait_for(call, "every request posted before to complete at its target", pe,
                    [&] { return tshmemi_proxy_done(host_ring(), ticket); });
  }

  // Posts to the host ring, waiting (bounded) while it is full. A ticket taken and never written would stop the
  // ring for good: when the wait for room fails, the path is stopped anyway.
  Status post_host(const char *call, const tshmemi_proxy_request &request, uint64_t *ticket) {
    if (failed_.load(std::memory_order_acquire))
      return stopped_error(call, request.op == TSHMEMI_PROXY_QUIET ? -1 : static_cast<int>(request.pe));
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
    const auto warn_after = std::chrono::milliseconds(config_.warn_ms);
    bool warned = config_.warn_ms <= 0 || config_.warn_ms >= config_.timeout_ms;
    for (unsigned spins = 0;; ++spins) {
      // Checked after ready() too: a stopped path's counters read TSHMEMI_PROXY_STOPPED, which looks ready.
      const bool done = ready();
      if (failed_.load(std::memory_order_acquire)) return stopped_error(call, pe);
      if (done) break;
      progress_while_waiting();  // a wait of tshmem's on other PEs, as every other (bounded_wait.h)
      if (spins > 256) std::this_thread::yield();
      if ((spins & 1023u) == 1023u && !warned && std::chrono::steady_clock::now() - start > warn_after) {
        warned = true;  // the first word, long before the bound: what is awaited, and when the wait gives up
        TSHMEMI_LOG(kWarn, kLogInit,
                    "%s: PE %d has waited %lld ms for %s%s; it gives up at %lld ms (TSHMEM_PROXY_TIMEOUT_MS; "
                    "this note comes after TSHMEM_WAIT_WARN_MS)%s",
                    call, my_pe_, static_cast<long long>(config_.warn_ms), what,
                    pe >= 0 ? format(" (to PE %d)", pe).c_str() : "", static_cast<long long>(config_.timeout_ms),
                    transport_->waiting_on().c_str());
      }
      if ((spins & 1023u) == 1023u && std::chrono::steady_clock::now() - start > bound) {
        const std::string message =
            format("%s: PE %d waited %lld ms for %s%s and gives up (TSHMEM_PROXY_TIMEOUT_MS)%s", call, my_pe_,
                   static_cast<long long>(config_.timeout_ms), what, pe >= 0 ? format(" (to PE %d)", pe).c_str() : "",
                   transport_->waiting_on().c_str());
        record_failure(TSHMEM_ERR_TIMEOUT, message + "; the off-node path is stopped");
        return set_error(TSHMEM_ERR_TIMEOUT, "%s", message.c_str());
      }
    }
    return TSHMEM_SUCCESS;
  }

  // A host call served on the calling thread: refused at once on a stopped path; a wait that passed its bound (or
  // a transport error) stops the path, as a wait on the proxy does.
  template <class Call>
  Status direct(const char *call, int pe, Call issue) {
    if (failed_.load(std::memory_order_acquire)) return stopped_error(call, pe);
    const Status status = issue();
    if (status == TSHMEM_SUCCESS || status == TSHMEM_ERR_INVALID_ARG) return status;
    const std::string message = last_error_message();
    record_failure(status, message + "; the off-node path is stopped");
    return set_error(status, "%s", message.c_str());
  }

  // Names the call, the PE it was for (-1: none) and why the path stopped (the first failure: an earlier bound).
  Status stopped_error(const char *call, int pe) {
    return set_error(failure_code(), "%s%s: the off-node path of PE %d has stopped: %s", call,
                     pe >= 0 ? format(" (to PE %d)", pe).c_str() : "", my_pe_, failure().c_str());
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
    if (reader_) reader_->stop(message);
  }

  void note_refusal(const std::string &message) {
    log_throttled(LogLevel::kWarn, kLogInit, "off-node proxy refusal", message);
    std::lock_guard<std::mutex> lock(refusal_mutex_);
    last_refusal_ = message;
    ++refused_;
  }

  // --- what the transport tells (the proxy thread) ---

  void delivered(uint64_t dst, uint64_t bytes, const Waiter &waiter) override {
    if (waiter.mark != 0)
      staged_get_arrived(waiter.mark - 1, bytes);
    else
      ChannelReader::deliver(dst, waiter.tag);
  }

  // --- staged gets: each completes by itself, once all of its bytes have arrived ---

  // The staged GET `ticket` of the device channel (being issued) awaits `bytes`.
  void staged_get_awaits(uint64_t ticket, uint64_t bytes) {
    staged_gets_[ticket & (staged_gets_.size() - 1)] = StagedGet{ticket, bytes};
    if (bytes == 0) reader_->staged_get_complete(ChannelReader::kDevice, ticket);
  }

  // `bytes` of the staged GET `ticket` are in its staging: with the last of them its result tag says complete.
  void staged_get_arrived(uint64_t ticket, uint64_t bytes) {
    StagedGet &get = staged_gets_[ticket & (staged_gets_.size() - 1)];
    if (get.ticket != ticket || get.awaited == 0) return;
    get.awaited -= std::min(get.awaited, bytes);
    if (get.awaited == 0) reader_->staged_get_complete(ChannelReader::kDevice, ticket);
  }

  void message_refused(const std::string &message) override { note_refusal(message); }
  void peer_stopped(int pe) override {
    peer_gone_ = true;  // it told every PE itself
    record_failure(TSHMEM_ERR_MPI, format("the off-node proxy of PE %d stopped (its log says why)", pe));
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
  // A watchdog that itself woke far later than it asked was paused with the whole process (SIGSTOP, a debugger,
  // a suspended machine): the proxy thread was not held, and it gets the bound again from the resumption.
  void watch() {
    const auto bound = bound_of(config_);
    constexpr auto kTick = std::chrono::milliseconds(100);
    constexpr auto kPaused = std::chrono::milliseconds(1000);
    uint64_t last = heartbeat_.load(std::memory_order_relaxed);
    Clock::time_point moved = Clock::now(), woke = moved;
    std::unique_lock<std::mutex> lock(watchdog_mutex_);
    while (!watchdog_stop_) {
      watchdog_wake_.wait_for(lock, kTick);
      const uint64_t now = heartbeat_.load(std::memory_order_relaxed);
      const Clock::time_point previous = woke;
      woke = Clock::now();
      if (now != last || failed_.load(std::memory_order_acquire) || woke - previous > kTick + kPaused) {
        last = now;
        moved = woke;
      } else if (woke - moved > bound) {
        record_failure(TSHMEM_ERR_TIMEOUT,
                       format("the off-node proxy thread of PE %d has not run for %lld ms (TSHMEM_PROXY_TIMEOUT_MS): "
                              "it is held, as in a CUDA call that waits for the device (cudaFree, a module load) "
                              "while a kernel waits for this proxy",
                              my_pe_, static_cast<long long>(bound.count())));
        moved = Clock::now();
      }
    }
  }

  // The bound of every wait that depends on another PE: what the transport has awaited for longer (a reply,
  // credits) stops the path. Looked at every 10 ms.
  void check_waits() {
    const Clock::time_point now = Clock::now();
    if (now - last_check_ < std::chrono::milliseconds(10)) return;
    last_check_ = now;
    const std::string overdue = transport_->overdue(bound_of(config_));
    if (!overdue.empty()) record_failure(TSHMEM_ERR_TIMEOUT, overdue);
  }

  // --- the proxy thread ---

  void run() {
    Status status = memory_->bind_thread();
    const bool wakes_on_arrival = transport_->wakes_on_arrival();
    const bool drives_progress = config_.env == nullptr || config_.env->debug_proxy_progress;  // (a test's setting)
    // Where the thread is woken by what arrives and the host's PEs have fewer cores than threads, each idle pause
    // after the channels have been empty for kChannelsQuiet doubles, up to 1 ms: a proxy waking every 50 us takes a
    // core from a PE 20,000 times a second (2 PEs on 2 cores, UCX over tcp: host put + quiet 28-43 us with 651,000
    // context switches in a run, 21 us and 60,000 with 1 ms pauses, where Open MPI's OpenSHMEM took 18-21 us).
    // What arrives wakes it at once all the same; a request posted to a channel after a quiet spell waits for the
    // pause's end, 1 ms at most.
    const bool pause_grows = wakes_on_arrival && cores_shared(config_.host_pes);
    if (pause_grows)
      TSHMEMI_LOG(kInfo, kLogInit,
                  "off-node proxy of PE %d: the %d PEs of this host have fewer cores than threads (an application "
                  "thread and a proxy thread each): after %lld ms of empty channels its idle pause grows from %lld us "
                  "to %lld us (what arrives from other PEs still wakes it)",
                  my_pe_, std::max(config_.host_pes, 1), static_cast<long long>(kChannelsQuiet.count()),
                  static_cast<long long>(kPause.count()), static_cast<long long>(kLongestPause.count()));
    std::chrono::microseconds pause = kPause;
    Clock::time_point last_take = Clock::now();
    unsigned idle = 0;
    while (status == TSHMEM_SUCCESS && !failed_.load(std::memory_order_acquire)) {
      heartbeat_.fetch_add(1, std::memory_order_relaxed);
      check_waits();
      bool worked = false;
      status = advance(&worked);
      const bool took = worked;  // requests from the channels, which wake nobody: they are polled for
      if (status == TSHMEM_SUCCESS && drives_progress) status = transport_->progress(&worked);
      if (status != TSHMEM_SUCCESS) break;
      if (reader_->release(transport_->released())) worked = true;
      const int command = command_.load(std::memory_order_acquire);
      if (command == kStop) break;
      if (command == kDrain && !current_.busy && !drained_.load(std::memory_order_relaxed) &&
          !reader_->visible(ChannelReader::kDevice) && !reader_->visible(ChannelReader::kHost)) {
        ChannelReader::Taken drain;  // completes everything posted, then sets drained_
        drain.ring = kInternal;
        drain.request = quiet_request();
        start(drain);
        worked = true;
      }
      // Busy polling keeps latency low; an idle proxy pauses so it does not take a core from the PEs: the
      // transport wakes it early where it can (what arrives from other PEs), requests in the channels wait for
      // the pause's end. (Shorter sleeps measured worse where cores are few: the waking proxies take them from
      // the PEs.)
      if (took || (worked && !wakes_on_arrival))
        idle = 0;
      else if (worked)
        idle = std::max(idle, kSpinsBeforeSleep - kSpinsAfterArrival);
      else
        ++idle;
      if (took) last_take = Clock::now();
      if (worked) pause = kPause;
      if (idle > kSpinsBeforeSleep) {
        transport_->idle(pause);
        if (pause_grows && Clock::now() - last_take > kChannelsQuiet) pause = std::min(pause * 2, kLongestPause);
      }
    }
    if (status != TSHMEM_SUCCESS) record_failure(status, last_error_message());
    // Finalize stops a path that is running; one that failed, even in the pass that saw the stop command (a peer's
    // stop notice read there), is abandoned: the UCX staged mode must then not destroy its worker (ucx_worker.cc).
    if (!failed_.load(std::memory_order_acquire)) return;
    transport_->abandon(failure());  // nothing in flight lands after its waiter was answered (transport.h)
    if (!peer_gone_) transport_->tell_stopped();
  }

  void start(const ChannelReader::Taken &taken) {
    current_ = Current();
    current_.busy = true;
    current_.taken = taken;
  }

  // The request's operations are issued: its slot is freed once the transport has read its source and, with a
  // result slot, once its reader has taken the value. A refused request gets no result, so nobody will take one:
  // its slot is not held for it.
  void finish(bool refused = false) {
    current_.busy = false;
    const ChannelReader::Taken &taken = current_.taken;
    // A staged get's staging is the kernel's until it has read it: it frees the ticket as a result slot's reader does.
    const bool staged_get = taken.request.op == TSHMEMI_PROXY_GET && (taken.request.flags & TSHMEMI_PROXY_FLAG_STAGED);
    // (refused too: its result tag ends the kernel's wait all the same, and it then reads the staging and frees the
    // ticket).
    const bool result_slot = (!refused && (taken.request.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT) != 0) || staged_get;
    if (refused && staged_get && taken.ring != kInternal) reader_->staged_get_complete(taken.ring, taken.ticket);
    if (taken.ring != kInternal) reader_->finish(taken, transport_->issued(), result_slot);
  }

  // Takes requests and issues their operations as far as the transport takes them.
  Status advance(bool *worked) {
    for (int takes = 0; takes < kTakesPerPass; ++takes) {
      if (!current_.busy) {
        ChannelReader::Taken taken;
        if (!reader_->take(&taken)) return TSHMEM_SUCCESS;
        start(taken);
        *worked = true;
        if (const char *rule =
                wire::check_request(taken.request, n_pes_, heap_bytes_, reader_->stage_max(taken.ring))) {
          note_refusal(wire::request_refusal(my_pe_, taken.ticket, rule, taken.request));
          finish(true);
          continue;
        }
      }
      bool complete = false;
      TSHMEM_CHECK(step(&complete));
      if (!complete) return TSHMEM_SUCCESS;
      finish();
    }
    return TSHMEM_SUCCESS;
  }

  // A put's data as far as the transport takes it. A staged payload (proxy_types.h) is host memory the producer
  // wrote: handed to the transport as such, in at most two pieces (it may wrap at the end of the staging ring), so
  // no CUDA call of this process lies on its path.
  Status put(const tshmemi_proxy_request &r) {
    const PutOp whole = wire::put_of(r);
    if (!(r.flags & TSHMEMI_PROXY_FLAG_STAGED)) return transport_->put(whole, &current_.progress);
    while (current_.progress < r.bytes) {
      uint64_t bytes = r.bytes - current_.progress;
      PutOp piece = whole;
      piece.src = reader_->staged(r, current_.progress, &bytes);
      piece.offset += current_.progress;
      piece.bytes = bytes;
      piece.host_src = true;
      uint64_t done = 0;
      TSHMEM_CHECK(transport_->put(piece, &done));
      current_.progress += done;
      if (done < bytes) return TSHMEM_SUCCESS;
    }
    return TSHMEM_SUCCESS;
  }

  // A get's data as far as the transport takes it. A staged get's data goes to the kernel's staging (host memory,
  // which the kernel then reads itself), in at most two pieces: no CUDA call of this process lies on its path.
  Status get(const tshmemi_proxy_request &r, const Waiter &waiter) {
    const GetOp whole = wire::get_of(r, waiter);
    if (!(r.flags & TSHMEMI_PROXY_FLAG_STAGED)) return transport_->get(whole, &current_.progress);
    const uint64_t ticket = current_.taken.ticket;
    if (!current_.awaited) {  // before the first piece: the transport may deliver it within its get()
      current_.awaited = true;
      staged_get_awaits(ticket, r.bytes);
    }
    while (current_.progress < r.bytes) {
      uint64_t bytes = r.bytes - current_.progress;
      GetOp piece = whole;
      piece.dst = reinterpret_cast<uint64_t>(reader_->staged(r, current_.progress, &bytes));
      piece.offset += current_.progress;
      piece.bytes = bytes;
      piece.waiter.host = true;
      piece.waiter.mark = ticket + 1;
      uint64_t done = 0;
      TSHMEM_CHECK(transport_->get(piece, &done));
      current_.progress += done;
      if (done < bytes) return TSHMEM_SUCCESS;
    }
    return TSHMEM_SUCCESS;
  }

  // Issues the current request's operations (wire.h: what each op becomes); *complete once all are issued (a
  // QUIET: once complete).
  Status step(bool *complete) {
    const ChannelReader::Taken &taken = current_.taken;
    const tshmemi_proxy_request &r = taken.request;
    const Waiter waiter = wire::waiter_of(r, taken.ticket, taken.ring == ChannelReader::kDevice);
    bool issued = false;
    switch (r.op) {
      case TSHMEMI_PROXY_PUT:
      case TSHMEMI_PROXY_PUT_SIGNAL:
        TSHMEM_CHECK(put(r));
        if (current_.progress < r.bytes) return TSHMEM_SUCCESS;
        if (r.op == TSHMEMI_PROXY_PUT || current_.signalled) break;
        TSHMEM_CHECK(transport_->signal(wire::signal_of(r), &issued));
        if (!issued) return TSHMEM_SUCCESS;
        current_.signalled = true;
        break;
      case TSHMEMI_PROXY_SIGNAL:
        TSHMEM_CHECK(transport_->signal(wire::signal_of(r), &issued));
        if (!issued) return TSHMEM_SUCCESS;
        break;
      case TSHMEMI_PROXY_AMO:
        TSHMEM_CHECK(transport_->amo(wire::amo_of(r, waiter), &issued));
        if (!issued) return TSHMEM_SUCCESS;
        break;
      case TSHMEMI_PROXY_GET:
        // A staged GET's kernel waits on this ticket's result tag, not on a QUIET of its own (a QUIET needs a
        // ticket, and staged GETs that hold every ticket of the ring until their readers take them would leave none
        // for it). The tag is raised once its last byte has arrived (delivered()): the thread goes on to the next
        // request meanwhile, so the gets of many kernel threads are in flight together.
        TSHMEM_CHECK(get(r, waiter));
        if (current_.progress < r.bytes) return TSHMEM_SUCCESS;
        break;
      case TSHMEMI_PROXY_FENCE: TSHMEM_CHECK(transport_->fence()); break;
      case TSHMEMI_PROXY_QUIET:
        TSHMEM_CHECK(transport_->quiet(waiter, &issued));
        if (!issued) return TSHMEM_SUCCESS;
        if (taken.ring == kInternal)
          drained_.store(true, std::memory_order_release);
        else
          reader_->complete(taken.ring, taken.ticket);
        break;
    }
    *complete = true;
    return TSHMEM_SUCCESS;
  }

  Bootstrap &boot_;
  char *heap_;
  uint64_t heap_bytes_;
  ProxyConfig config_;
  int my_pe_, n_pes_;
  std::unique_ptr<ProxyMemory> memory_;
  std::unique_ptr<ChannelReader> reader_;
  std::unique_ptr<Transport> transport_;
  HostRma *host_ = nullptr;             ///< the transport's host calls on the calling thread, or nullptr
  bool waits_progress_ = false;         ///< this engine is the progress of tshmem's waits (set_wait_progress)
  std::string name_;                    ///< the transport's name (its table row)
  std::string choice_note_;             ///< why auto passed over the transports before it
  bool peer_gone_ = false;              ///< stopped because another PE's proxy did (no notice of our own)
  Clock::time_point last_check_;        ///< of check_waits
  std::atomic<uint64_t> heartbeat_{0};  ///< the proxy thread's passes, for the watchdog
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  bool watchdog_stop_ = false;

  /// The request in progress (the proxy thread's only).
  struct Current {
    bool busy = false;
    ChannelReader::Taken taken;
    uint64_t progress = 0;   ///< bytes of a put or get issued
    bool signalled = false;  ///< a PUT_SIGNAL's signal is issued
    bool awaited = false;    ///< a staged GET's bytes are counted in staged_gets_
  } current_;

  /// A staged GET issued (or complete, until its ticket's index is reused): the bytes it still awaits.
  struct StagedGet {
    uint64_t ticket = UINT64_MAX;
    uint64_t awaited = 0;
  };
  /// By ticket modulo the device channel's capacity: a staged GET holds its ticket until its reader has the data,
  /// so no two in flight share an entry.
  std::vector<StagedGet> staged_gets_;

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

bool cores_shared(int host_pes) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cores = sched_getaffinity(0, sizeof(allowed), &allowed) == 0
                        ? CPU_COUNT(&allowed)
                        : static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0) return false;  // unknown: as before
  // Bound to fewer cores than the host has (a launcher's binding): this PE's two threads share its own.
  const int host_cores = static_cast<int>(std::thread::hardware_concurrency());
  if (host_cores > 0 && cores < host_cores) return cores < 2;
  return 2 * std::max(host_pes, 1) > cores;
}

uint64_t proxy_staging_bytes(const ProxyConfig &config) {
  return staged_transport_staging_bytes(config.chunk_bytes) +
         ChannelReader::staging_bytes(config.ring_entries, config.stage_max);
}

uint64_t proxy_reply_queue_bytes(int n_pes) { return staged_transport_reply_queue_bytes(n_pes); }

Status check_remote_transport(const std::string &value) {
  if (value == "auto" || find_transport(value) != nullptr) return TSHMEM_SUCCESS;
  return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_REMOTE_TRANSPORT='%s': expected one of %s", value.c_str(),
                   transport_choices().c_str());
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
  const std::string &wanted = config.env->remote_transport;
  TSHMEM_CHECK(agree_on_status(boot, check_remote_transport(wanted), "tshmem_init"));
  std::unique_ptr<ProxyMemory> memory;
  Status local = TSHMEM_SUCCESS;
#if TSHMEM_HAVE_CUDA
  if (cuda_device >= 0) local = make_gpu_proxy_memory(cuda_device, &memory);
#endif
  if (local == TSHMEM_SUCCESS && !memory) local = make_host_proxy_memory(&memory);
  TSHMEM_CHECK(agree_on_status(boot, local, "tshmem_init: the off-node proxy's memory"));
  auto proxy = std::make_unique<ProxyEngine>(boot, mem, heap_bytes, config);
  TransportInputs in;
  in.boot = &boot;
  in.env = config.env;
  in.heap_on_gpu = mem.device_memory();
  in.back_whole_heap = [&boot, &mem, heap_bytes] {
    return mem.back(boot, 0, heap_bytes, "tshmem_init (the heap the off-node transport registers)");
  };
  in.cuda_device = cuda_device;
  in.node_of_pe = boot.node_of_pe();
  // TSHMEM_REMOTE_TRANSPORT: the one named, or the first of the table that is built and starts here (auto).
  std::string why_not;
  for (const TransportEntry *entry : transport_table()) {
    if (wanted != "auto" && wanted != entry->name) continue;
    std::string reason = entry->not_built();
    if (reason.empty()) {
      local = proxy->create(*entry, in, &memory, &reason);
      TSHMEM_CHECK(
          agree_on_status(boot, local, format("tshmem_init: starting the off-node transport %s", entry->name).c_str()));
      if (proxy->started()) {
        if (!why_not.empty()) proxy->set_choice_note(why_not);
        *out = std::move(proxy);
        return TSHMEM_SUCCESS;
      }
    }
    if (wanted != "auto")
      return set_error(TSHMEM_ERR_CONFIG, "tshmem_init: TSHMEM_REMOTE_TRANSPORT=%s cannot reach other nodes: %s",
                       entry->name, reason.c_str());
    why_not += format("%s%s: %s", why_not.empty() ? "" : "; ", entry->name, reason.c_str());
  }
  *unavailable = why_not;
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
