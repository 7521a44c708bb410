// The UCX transport's direct mode: every PE's heap is registered (ucp_mem_map) and its remote key known, so an
// operation on a PE of another node is one ucp call on the calling thread: ucp_put_nbx, ucp_get_nbx,
// ucp_atomic_op_nbx; a signal is its data, ucp_worker_fence, then the word (SET: a put, ADD: an atomic); quiet is
// ucp_worker_flush_nbx. The proxy thread issues the device channel's requests and progresses the worker (UCX's
// emulated one-sided operations, over transports without RDMA, need the target's worker progressed); host calls
// issue on their own thread and wait there (HostRma). While an application thread waits in tshmem (a host call, a
// barrier, a signal wait: progress_from_waiter), it progresses the worker instead, and the proxy thread leaves
// UCX's progress to it.
// On a host-memory heap the proxy thread's small puts and SET signals travel in batches instead (ucx_batches.h: one
// tagged message per PE and pass, applied by the target's proxy thread with the CPU); a GPU heap (GPUDirect) keeps
// every operation one-sided.
// Control messages (the stop notice, batch acknowledgements, and what a broken peer might send) travel as tagged
// messages.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "transport/ucx/ucx_batches.h"
#include "transport/ucx/ucx_bulk_puts.h"
#include "transport/ucx/ucx_parts.h"
#include "transport/wire.h"

namespace tshmemi {
namespace ucx {
namespace {

using Clock = std::chrono::steady_clock;

/// Operations of the proxy thread in flight at once (each holds a slot for its operand and fetched value).
constexpr size_t kSlots = 1024;
/// Receives posted for control messages and batches (handled in the order posted: the order UCX matches them).
constexpr int kControlReceives = 4;

/// An operation of the proxy thread that UCX has not completed yet.
struct InFlight {
  ucs_status_ptr_t request = nullptr;
  uint64_t seq = 0;  ///< the point of issued() it belongs to
  int pe = -1;
  const char *what = "";  ///< for a timeout's message
  uint64_t dst = 0;       ///< a get's or fetched value's destination, delivered on completion (0: none)
  uint64_t bytes = 0;     ///< a get's bytes, or the fetched value's width
  Waiter waiter;
  size_t slot = SIZE_MAX;  ///< its operand / fetched-value slot
  unsigned width = 0;      ///< a fetched value's bytes
  Clock::time_point since;
};

/// An atomic's operand and fetched value (UCX reads and writes them until the operation completes).
struct Slot {
  alignas(8) uint64_t operand = 0;
  alignas(8) uint64_t reply = 0;
};

class Direct final : public Transport, public HostRma {
 public:
  Direct(std::unique_ptr<Worker> worker, const TransportInputs &in, std::string path)
      : worker_(std::move(worker)),
        messenger_(make_messenger(*worker_)),
        memory_(*in.memory),
        sink_(*in.sink),
        path_(std::move(path)),
        bound_(in.timeout_ms),
        capacity_(wire::message_capacity(in.chunk_bytes)),
        heap_(in.heap),
        heap_bytes_(in.heap_bytes),
        slots_(kSlots),
        awaiting_(static_cast<size_t>(worker_->n_pes())),
        one_sided_(static_cast<size_t>(worker_->n_pes()), 0),
        flushing_pe_(static_cast<size_t>(worker_->n_pes()), 0),
        notice_(wire::gone()),
        notices_(static_cast<size_t>(worker_->n_pes())),
        notified_(static_cast<size_t>(worker_->n_pes())) {
    for (size_t i = kSlots; i > 0; --i) free_slots_.push_back(i - 1);
    // A PE whose endpoint is cancelled is sent the stop notice first, on that endpoint (what is in its receive queue
    // stays there once the endpoint closes): the path stops right after, and the PE learns it when it runs again.
    worker_->on_cancel([this](int pe) { notify(pe); });
    if (!in.heap_on_gpu) {
      batches_ = std::make_unique<Batches>(*messenger_, worker_->n_pes(), worker_->my_pe(),
                                           wire::Message::batch_limit(capacity_));
      bulk_ = std::make_unique<BulkPuts>(*worker_, heap_, heap_bytes_, sink_);
    }
  }

  ~Direct() override {
    for (InFlight &f : in_flight_)
      if (UCS_PTR_IS_PTR(f.request)) ucp_request_free(f.request);
    if (UCS_PTR_IS_PTR(flush_)) ucp_request_free(flush_);
    close();
    for (Control &n : notices_) messenger_->release(&n.request);
    batches_.reset();    // before the messenger it sends with
    bulk_.reset();       // before the worker its handler is registered on
    messenger_.reset();  // before the worker it runs on
  }

  Status create() {
    control_.assign(kControlReceives, std::vector<char>(capacity_));
    control_requests_.resize(kControlReceives);
    for (int i = 0; i < kControlReceives; ++i) TSHMEM_CHECK(post_control(i));
    if (bulk_) TSHMEM_CHECK(bulk_->create());
    return TSHMEM_SUCCESS;
  }

  std::string path_of(int) const override { return path_; }
  HostRma *host_rma() override { return this; }

  // --- the proxy thread's operations ---

  Status put(const PutOp &op, uint64_t *done) override {
    if (*done >= op.bytes) return TSHMEM_SUCCESS;
    const void *src = static_cast<const char *>(op.src) + *done;
    if (batchable(op, *done)) return put_batched(op, done);
    bool ready = false;
    TSHMEM_CHECK(one_sided_ready(op.pe, &ready));
    if (!ready) return TSHMEM_SUCCESS;
    size_t slot = SIZE_MAX;
    if (op.immediate) {  // the request's inline value: copied, as the request's slot is reused once taken
      if (free_slots_.empty()) return TSHMEM_SUCCESS;
      slot = take_slot();
      std::memcpy(&slots_[slot].operand, src, op.bytes - *done);
      src = &slots_[slot].operand;
    }
    TSHMEM_CHECK(order());
    const uint64_t remote = worker_->remote(op.pe, op.offset + *done);
    const ucs_status_ptr_t r = worker_->issue(op.pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      return ucp_put_nbx(ep, src, op.bytes - *done, remote, rkey, &param);
    });
    TSHMEM_CHECK(track(r, op.pe, "a put", 0, Waiter(), slot, 0));
    *done = op.bytes;
    return TSHMEM_SUCCESS;
  }

  Status get(const GetOp &op, uint64_t *done) override {
    if (*done >= op.bytes) return TSHMEM_SUCCESS;
    bool ready = false;
    TSHMEM_CHECK(one_sided_ready(op.pe, &ready));
    if (!ready) return TSHMEM_SUCCESS;
    TSHMEM_CHECK(order());
    const uint64_t remote = worker_->remote(op.pe, op.offset + *done);
    const ucs_status_ptr_t r = worker_->issue(op.pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      return ucp_get_nbx(ep, reinterpret_cast<void *>(op.dst + *done), op.bytes - *done, remote, rkey, &param);
    });
    TSHMEM_CHECK(track(r, op.pe, op.waiter.tag != 0 ? "the value of a g" : "the data of a get", op.dst, op.waiter,
                       SIZE_MAX, 0, op.bytes - *done));
    *done = op.bytes;
    return TSHMEM_SUCCESS;
  }

  Status amo(const AmoOp &op, bool *issued) override {
    *issued = false;
    if (free_slots_.empty()) return TSHMEM_SUCCESS;
    const bool fetching = amo_kind::fetches(op.kind);
    ucp_atomic_op_t code = UCP_ATOMIC_OP_ADD;
    uint64_t operand = op.value, reply = 0;
    switch (amo_kind::op(op.kind)) {
      case 0: operand = 0; break;  // FETCH: an add of 0 that returns the word
      case amo_kind::kAdd: break;
      case amo_kind::kInc: operand = 1; break;
      case amo_kind::kAnd: code = UCP_ATOMIC_OP_AND; break;
      case amo_kind::kOr: code = UCP_ATOMIC_OP_OR; break;
      case amo_kind::kXor: code = UCP_ATOMIC_OP_XOR; break;
      case amo_kind::kSet:
      case amo_kind::kSwap: code = UCP_ATOMIC_OP_SWAP; break;
      case amo_kind::kCswap:  // UCX compares the operand and swaps in the reply buffer's value
        code = UCP_ATOMIC_OP_CSWAP;
        operand = op.compare;
        reply = op.value;
        break;
      default: return set_error(TSHMEM_ERR_INTERNAL, "ucx: atomic kind %u is not one the proxy issues", op.kind);
    }
    bool ready = false;
    TSHMEM_CHECK(one_sided_ready(op.pe, &ready));
    if (!ready) return TSHMEM_SUCCESS;
    TSHMEM_CHECK(order());
    const size_t slot = take_slot();
    Slot &s = slots_[slot];
    write_width(&s.operand, operand, op.width);
    write_width(&s.reply, reply, op.width);
    const uint64_t remote = worker_->remote(op.pe, op.offset);
    const ucs_status_ptr_t r = worker_->issue(op.pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      param.datatype = ucp_dt_make_contig(op.width);
      param.reply_buffer = &s.reply;  // SWAP and CSWAP need one whether or not the value is wanted
      return ucp_atomic_op_nbx(ep, code, &s.operand, 1, remote, rkey, &param);
    });
    TSHMEM_CHECK(track(r, op.pe, fetching ? "the old value of a fetching atomic" : "an atomic", fetching ? op.dst : 0,
                       op.waiter, slot, op.width, op.width));
    *issued = true;
    return TSHMEM_SUCCESS;
  }

  // After the data (a fence), the word: SET a put of the value, ADD an atomic add. With batches, a SET is a record
  // of the batch (after the data in it, or after the one-sided data complete there); an ADD stays a UCX atomic, so
  // that every atomic on a word is UCX's (a network's atomics need not be atomic with the target CPU's).
  Status signal(const SignalOp &op, bool *issued) override {
    *issued = false;
    if (batches_ && op.kind == TSHMEMI_AMO_SET) {
      bool ready = false;
      TSHMEM_CHECK(batch_ready(op.pe, &ready));
      char *at = nullptr;
      if (ready) TSHMEM_CHECK(batches_->open_record(op.pe, wire::kHeader, &at));
      if (at == nullptr) return TSHMEM_SUCCESS;
      wire::write(at, wire::signal(op.offset, op.kind, op.value));
      worked_ = true;
      *issued = true;
      return TSHMEM_SUCCESS;
    }
    if (free_slots_.empty()) return TSHMEM_SUCCESS;
    bool ready = false;
    TSHMEM_CHECK(one_sided_ready(op.pe, &ready));
    if (!ready) return TSHMEM_SUCCESS;
    TSHMEM_CHECK(fence());
    unordered_ = true;
    const size_t slot = take_slot();
    slots_[slot].operand = op.value;
    const uint64_t remote = worker_->remote(op.pe, op.offset);
    const ucs_status_ptr_t r = worker_->issue(op.pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      if (op.kind == TSHMEMI_AMO_SET)
        return ucp_put_nbx(ep, &slots_[slot].operand, sizeof(uint64_t), remote, rkey, &param);
      param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
      param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
      return ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &slots_[slot].operand, 1, remote, rkey, &param);
    });
    TSHMEM_CHECK(track(r, op.pe, "a signal", 0, Waiter(), slot, 0));
    *issued = true;
    return TSHMEM_SUCCESS;
  }

  Status fence() override {
    const ucs_status_t s = ucp_worker_fence(worker_->worker());
    unordered_ = false;
    return s == UCS_OK ? TSHMEM_SUCCESS : ucx_error("ucp_worker_fence", s);
  }

  // The flush starts once every operation of this thread has completed locally. An operation UCX could not send
  // at once (the peer's receive queue full: a put over shared memory to a target slow to take it) waits in UCX's
  // send queue as an incomplete request, and UCX's worker flush counts only what was sent: with all of that
  // acknowledged it completes although requests are still queued (seen with UCX 1.13 over sm: a quiet returned
  // and the target read the 457th of 500 puts to one word). Once none is queued, the flush covers them all.
  // Batches first: every one sent and acknowledged (applied at its target).
  Status quiet(const Waiter &, bool *complete) override {
    *complete = false;
    if (batches_) {
      TSHMEM_CHECK(batches_->send_open());
      if (!batches_->settled()) return TSHMEM_SUCCESS;
    }
    if (!flushing_) {
      TSHMEM_CHECK(reap());
      if (!in_flight_.empty()) return TSHMEM_SUCCESS;
      ucp_request_param_t param = {};
      flush_ = ucp_worker_flush_nbx(worker_->worker(), &param);
      if (UCS_PTR_IS_ERR(flush_)) return ucx_error("ucp_worker_flush_nbx", UCS_PTR_STATUS(flush_));
      flushing_ = true;
      flush_since_ = Clock::now();
      worked_ = true;
    }
    if (UCS_PTR_IS_PTR(flush_)) {
      const ucs_status_t s = ucp_request_check_status(flush_);
      if (s == UCS_INPROGRESS) return TSHMEM_SUCCESS;
      ucp_request_free(flush_);
      flush_ = nullptr;
      if (s != UCS_OK) return ucx_error("a flush (quiet)", s);
    }
    TSHMEM_CHECK(reap());  // gets and fetches complete with the flush: delivered now
    if (!in_flight_.empty()) return TSHMEM_SUCCESS;
    flushing_ = false;
    *complete = true;
    return TSHMEM_SUCCESS;
  }

  // Where an application thread progresses the worker (it spins in a wait of tshmem's: a host call, a barrier, a
  // signal wait), the pass leaves UCX's progress to it: two threads progressing one worker take turns at UCX's lock,
  // and on few cores the one spinning for it holds the core the other needs (measured on 2 cores, perf: 70-93 % of
  // the proxy threads' samples in the lock's spin). What this thread owns (completions, control messages, batches)
  // is looked at all the same. Spinning: at least one progress per kDrivenPollEvery since the pass before; a wait
  // that has gone on for a second polls once a millisecond, and serves arrivals no faster than that, so this thread
  // takes them (woken by them) as where nobody waits.
  Status progress(bool *worked) override {
    const Clock::time_point now = Clock::now();
    const uint64_t application = worker_->application_progress();
    const uint64_t polls = application - application_seen_;
    driven_ = polls > 0 && polls * kDrivenPollEvery >= now - last_pass_;
    application_seen_ = application;
    last_pass_ = now;
    const unsigned events = driven_ ? 0 : ucp_worker_progress(worker_->worker());
    TSHMEM_CHECK(reap());
    TSHMEM_CHECK(poll_control());
    if (batches_) {  // the pass's batches go now; then what this PE applied is acknowledged
      if (batches_->sending()) worked_ = true;
      TSHMEM_CHECK(batches_->send_open());
      TSHMEM_CHECK(batches_->reap());
      TSHMEM_CHECK(batches_->send_acks());
    }
    // A pass that moved nothing gives the core away: where threads outnumber cores (the application's thread
    // polling a flag, the proxy threads of other PEs), the proxy spinning in UCX would hold the core the thread it
    // waits for needs (MPI's yield_when_idle, which the MPI transport gets through MPI). Measured on 2 cores:
    // device-channel p ping-pong 903 -> 59 us.
    if (worked_ || events != 0)
      *worked = true;
    else
      std::this_thread::yield();
    worked_ = false;
    return TSHMEM_SUCCESS;
  }

  // Operations in flight are not waited for here: what completes some of them (room in a peer's receive queue for
  // those UCX still holds) wakes nobody, so the thread keeps passing (each yields) until none is left.
  // While an application thread progresses the worker (a host call waiting, or a wait on other PEs:
  // progress_from_waiter), that thread takes what arrives: the proxy thread pauses without the event descriptor,
  // or every arrival would wake it too, and the two would share the cores for each.
  void idle(std::chrono::microseconds most) override {
    if (!in_flight_.empty() || flushing_ || (batches_ && batches_->sending())) return;
    if (driven_) {
      std::this_thread::sleep_for(most);
      return;
    }
    worker_->wait_for_event(most);
  }
  bool wakes_on_arrival() const override { return worker_->wakes(); }

  // Any application thread: UCX's worker is made for several threads (ucx_worker.h); what the proxy thread owns
  // (operations in flight, batches, control receives) is left to it: a receive this completes is handled on the
  // proxy thread's next pass.
  void progress_from_waiter() override { worker_->progress_from_application(); }

  uint64_t issued() const override { return issued_; }
  uint64_t released() const override { return in_flight_.empty() ? issued_ : oldest_seq() - 1; }

  // --- bounds and failure ---

  std::string overdue(std::chrono::milliseconds bound) override {
    if (batches_) {
      std::string late = batches_->overdue(bound);
      if (!late.empty()) return late;
    }
    const Clock::time_point now = Clock::now();
    const InFlight *oldest = nullptr;
    for (const InFlight &f : in_flight_)
      if (oldest == nullptr || f.since < oldest->since) oldest = &f;
    if (oldest != nullptr && now - oldest->since > bound) {
      const std::string late = format(
          "%s%s to PE %d has not completed in ucx for %lld ms (TSHMEM_PROXY_TIMEOUT_MS); the off-node path of PE %d "
          "is stopped",
          oldest->waiter.kernel ? "for a kernel, " : "", oldest->what, oldest->pe,
          static_cast<long long>(bound.count()), worker_->my_pe());
      abandon(late);  // before the engine answers the requests' waiters with it
      return late;
    }
    if (flushing_ && now - flush_since_ > bound)
      return format(
          "a quiet (ucp_worker_flush) has not completed for %lld ms (TSHMEM_PROXY_TIMEOUT_MS); the off-node path of "
          "PE %d is stopped",
          static_cast<long long>(bound.count()), worker_->my_pe());
    return std::string();
  }

  std::string waiting_on() const override {
    std::string pes;
    int listed = 0;
    for (int pe = 0; pe < worker_->n_pes() && listed < 8; ++pe)
      if (awaiting_[static_cast<size_t>(pe)].load(std::memory_order_relaxed) > 0) {
        pes += format("%s%d", pes.empty() ? "" : ", ", pe);
        ++listed;
      }
    const std::string batched = batches_ ? batches_->waiting_on() : std::string();
    std::string out = pes.empty() ? std::string() : "; ucx operations in flight to PE(s) " + pes;
    if (!batched.empty()) out += "; batches of small puts awaiting acknowledgement from PE(s) " + batched;
    return out;
  }

  // Best effort: a PE whose notice cannot be sent learns of the failure by its own bound.
  void tell_stopped() override {
    for (int pe = 0; pe < worker_->n_pes(); ++pe) notify(pe);
    const auto until = Clock::now() + std::chrono::milliseconds(200);  // a moment to hand the notices to the wire
    while (Clock::now() < until && ucp_worker_progress(worker_->worker()) != 0) {
    }
  }

  // The proxy thread, once the path has stopped (or an operation's bound expired: overdue()): what is in flight will
  // never be delivered. The endpoint of every PE it went to is closed by force (Worker::cancel), UCX completes the
  // operations as cancelled (waited for here, a second at most) and they are freed without delivery: no get or
  // fetched value lands in the heap or a staging buffer, and no put reads its source, after the waiter was answered.
  void abandon(const std::string &why) override {
    if (in_flight_.empty()) return;
    for (const InFlight &f : in_flight_) worker_->cancel(f.pe, why);
    (void)worker_->progress_until(Clock::now(), std::chrono::seconds(1), [this] {
      return std::none_of(in_flight_.begin(), in_flight_.end(),
                          [](const InFlight &f) { return ucp_request_check_status(f.request) == UCS_INPROGRESS; });
    });
    for (const InFlight &f : in_flight_) {
      ucp_request_free(f.request);  // one UCX has not cancelled within the second is released to it all the same
      awaiting_[static_cast<size_t>(f.pe)].fetch_sub(1, std::memory_order_relaxed);
      if (f.slot != SIZE_MAX) free_slots_.push_back(f.slot);
    }
    in_flight_.clear();
  }

  void close() override {
    std::vector<bool> held;
    messenger_->cancel(control_requests_.data(), control_requests_.size(), &held);
    for (size_t i = 0; i < held.size(); ++i)  // a message may still land in it: its buffer is left to the process
      if (held[i]) (void)new std::vector<char>(std::move(control_[i]));  // deliberately never freed
  }

  Status send_raw(int pe, const void *message, size_t bytes) override {
    Messenger::Request request;
    TSHMEM_CHECK(messenger_->isend(message, bytes, pe, &request));
    const auto until = Clock::now() + bound_;
    for (bool done = false; !done;) {
      ucp_worker_progress(worker_->worker());
      TSHMEM_CHECK(messenger_->test(&request, &done));
      if (!done && Clock::now() > until) {
        messenger_->release(&request);
        return set_error(TSHMEM_ERR_TIMEOUT, "ucx: a raw message to PE %d was not sent within the bound", pe);
      }
    }
    return TSHMEM_SUCCESS;
  }

  // --- host calls, on the calling thread ---

  // Host calls order as OpenSHMEM's do: a fence or quiet orders them (a put with signal fences between its data
  // and its word). A fence before every call would cost a round trip each (measured: put + quiet 3.4 -> 45 us).
  Status put(const char *call, int pe, uint64_t offset, const void *src, size_t bytes) override {
    if (bulk_ && bytes >= BulkPuts::kMinBytes)
      return bulk_put(call, pe, offset, src, bytes, "the put's source to be sent");
    const uint64_t remote = worker_->remote(pe, offset);
    const ucs_status_ptr_t r = worker_->issue(pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      return ucp_put_nbx(ep, src, bytes, remote, rkey, &param);
    });
    return worker_->wait(r, bound_, call, "the put's source to be sent", pe);
  }

  Status get(const char *call, int pe, uint64_t offset, void *dst, size_t bytes) override {
    const uint64_t remote = worker_->remote(pe, offset);
    const ucs_status_ptr_t r = worker_->issue(pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
      ucp_request_param_t param = {};
      return ucp_get_nbx(ep, dst, bytes, remote, rkey, &param);
    });
    return worker_->wait(r, bound_, call, "the data of a get", pe);
  }

  Status put_signal(const char *call, const PutOp &data, const SignalOp &signal) override {
    const int pe = data.pe;
    ucs_status_ptr_t put = nullptr;
    const uint64_t data_at = worker_->remote(pe, data.offset), word_at = worker_->remote(pe, signal.offset);
    if (bulk_ && data.bytes >= BulkPuts::kMinBytes) {
      // The data by rendezvous (its own lanes): acknowledged in the target's heap before the word is issued.
      const auto start = Clock::now();
      uint64_t ticket = 0;
      TSHMEM_CHECK(bulk_put(call, pe, data.offset, data.src, data.bytes, "the data of a put with signal", &ticket));
      TSHMEM_CHECK(await_bulk(call, start, [&] { return bulk_->arrived(ticket); }));
    } else if (data.bytes > 0) {
      put = worker_->issue(pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
        ucp_request_param_t param = {};
        return ucp_put_nbx(ep, data.src, data.bytes, data_at, rkey, &param);
      });
    }
    if (UCS_PTR_IS_ERR(put)) return worker_->wait(put, bound_, call, "the data of a put with signal", pe);
    const ucs_status_t fenced = ucp_worker_fence(worker_->worker());
    uint64_t value = signal.value;
    ucs_status_ptr_t word = nullptr;
    if (fenced == UCS_OK)
      word = worker_->issue(pe, [&](ucp_ep_h ep, ucp_rkey_h rkey) {
        ucp_request_param_t param = {};
        if (signal.kind == TSHMEMI_AMO_SET) return ucp_put_nbx(ep, &value, sizeof(value), word_at, rkey, &param);
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
        return ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &value, 1, word_at, rkey, &param);
      });
    // Both are waited for (the value lives on this stack), the data's source first. Where the data's wait expired,
    // the word was cancelled with it (one endpoint), and the data's message is the one the caller gets.
    const Status sent = worker_->wait(put, bound_, call, "the data of a put with signal", pe);
    const std::string sent_message = sent == TSHMEM_SUCCESS ? std::string() : last_error_message();
    if (fenced != UCS_OK) {
      TSHMEM_CHECK(sent);
      return ucx_error("ucp_worker_fence", fenced);
    }
    const Status signalled = worker_->wait(word, bound_, call, "the signal of a put with signal", pe);
    if (sent != TSHMEM_SUCCESS) return set_error(sent, "%s", sent_message.c_str());
    return signalled;
  }

  // The device channel's batches too (the proxy sends them at the end of its pass; acknowledgements arrive there):
  // waited for on this thread, within the bound, before the flush.
  Status quiet(const char *call) override {
    if (bulk_) TSHMEM_CHECK(await_bulk(call, Clock::now(), [&] { return bulk_->all_arrived(); }));
    if (batches_ && !batches_->settled()) {
      const auto until = Clock::now() + bound_;
      while (!batches_->settled()) {
        if (Clock::now() > until)
          return set_error(TSHMEM_ERR_TIMEOUT,
                           "%s: batches of small puts from the device channel of PE %d were not acknowledged within "
                           "%lld ms (TSHMEM_PROXY_TIMEOUT_MS)%s",
                           call, worker_->my_pe(), static_cast<long long>(bound_.count()), waiting_on().c_str());
        std::this_thread::yield();
      }
    }
    return worker_->flush(bound_, call);
  }

 private:
  struct Control {
    Messenger::Request request;
  };

  // Sends `pe` the stop notice, once (any thread: a host call's cancel, or the proxy thread's tell_stopped).
  void notify(int pe) {
    if (notified_[static_cast<size_t>(pe)].exchange(true, std::memory_order_acq_rel)) return;
    (void)messenger_->isend(&notice_, wire::kHeader, pe, &notices_[static_cast<size_t>(pe)].request);
  }

  static void write_width(uint64_t *at, uint64_t value, unsigned width) {
    if (width == sizeof(uint32_t)) {
      const uint32_t narrow = static_cast<uint32_t>(value);
      std::memcpy(at, &narrow, sizeof(narrow));
    } else {
      *at = value;
    }
  }

  // A large host put by rendezvous (ucx_bulk_puts.h), waited for until its source may be reused. One its target
  // refused (outside the heap, or into the region tshmem keeps: what only a peer that skipped its own checks sends)
  // fails as a bad argument, which leaves the off-node path running.
  // It returns once its source may be reused; the target acknowledges the data in its heap later (ucx_bulk_puts.h),
  // which a quiet waits for (all_arrived), and a put with signal for its data's before the word (arrived).
  Status bulk_put(const char *call, int pe, uint64_t offset, const void *src, size_t bytes, const char *what,
                  uint64_t *ticket = nullptr) {
    BulkPuts::Header header;
    ucs_status_t outcome = UCS_OK;
    const Status sent = worker_->wait(bulk_->issue(pe, offset, src, bytes, &header), bound_, call, what, pe, &outcome);
    if (outcome == BulkPuts::kRefused) {
      bulk_->forget(header.ticket);
      return set_error(TSHMEM_ERR_INVALID_ARG,
                       "%s: PE %d refused the put of %zu bytes at its heap offset %llu (outside its heap or into the "
                       "region tshmem keeps; its log says which)",
                       call, pe, bytes, static_cast<unsigned long long>(offset));
    }
    if (sent != TSHMEM_SUCCESS) bulk_->forget(header.ticket);
    if (ticket != nullptr) *ticket = header.ticket;
    return sent;
  }

  // Waits, within the bound from `start`, until `done()`: the bulk puts' acknowledgements. Past the bound the PEs
  // `pending()` names are cancelled (nothing of theirs moves any more) and forgotten, and the call fails naming them.
  template <class Done>
  Status await_bulk(const char *call, Clock::time_point start, Done done) {
    if (worker_->progress_until(start, bound_, done)) return TSHMEM_SUCCESS;
    const std::vector<int> pes = bulk_->pending();
    std::string names;
    for (int pe : pes) names += (names.empty() ? "" : ",") + std::to_string(pe);
    const std::string message = format(
        "%s: PE %d waited %lld ms for PE %s to acknowledge large puts (through ucx) and gives up "
        "(TSHMEM_PROXY_TIMEOUT_MS)",
        call, worker_->my_pe(), static_cast<long long>(bound_.count()), names.c_str());
    for (int pe : pes) {
      worker_->cancel(pe, message);  // what is outstanding to the PE moves no more
      bulk_->forget_pe(pe);
    }
    return set_error(TSHMEM_ERR_TIMEOUT, "%s", message.c_str());
  }

  // A put the CPU can copy into a batch: small (a record that fits a batch, whose size the smallest
  // TSHMEM_PROXY_CHUNK bounds), from host memory (a request's inline value, a kernel's staged
  // payload, the host heap).
  bool batchable(const PutOp &op, uint64_t done) const {
    if (!batches_ || op.bytes - done > wire::kSmallPayload || wire::record_bytes(op.bytes - done) > batches_->limit())
      return false;
    if (op.immediate || op.host_src) return true;
    const char *src = static_cast<const char *>(op.src) + done;
    return src >= heap_ && src <= heap_ + heap_bytes_ &&
           op.bytes - done <= static_cast<uint64_t>(heap_ + heap_bytes_ - src);
  }

  Status put_batched(const PutOp &op, uint64_t *done) {
    bool ready = false;
    TSHMEM_CHECK(batch_ready(op.pe, &ready));
    if (!ready) return TSHMEM_SUCCESS;
    const uint64_t bytes = op.bytes - *done;
    char *at = nullptr;
    TSHMEM_CHECK(batches_->open_record(op.pe, wire::record_bytes(bytes), &at));
    if (at == nullptr) return TSHMEM_SUCCESS;
    char *payload = wire::write(at, wire::put(op.offset + *done, bytes));
    std::memcpy(payload, static_cast<const char *>(op.src) + *done, bytes);
    std::memset(payload + bytes, 0, wire::padded(bytes) - bytes);
    *done = op.bytes;
    worked_ = true;
    return TSHMEM_SUCCESS;
  }

  // *ready once a one-sided operation to `pe` may be issued: every batch to it is acknowledged (applied there).
  Status one_sided_ready(int pe, bool *ready) {
    *ready = true;
    if (!batches_) return TSHMEM_SUCCESS;
    TSHMEM_CHECK(batches_->send(pe));
    *ready = batches_->settled(pe);
    if (*ready) one_sided_[static_cast<size_t>(pe)] = 1;
    return TSHMEM_SUCCESS;
  }

  // *ready once a record to `pe` may join a batch: the one-sided operations issued to it before are complete there.
  // They are first all handed to the network (a flush counts only what was sent: see quiet()), then the endpoint
  // is flushed; the flush is tracked as an operation of its own (its bound, its PE).
  Status batch_ready(int pe, bool *ready) {
    const size_t p = static_cast<size_t>(pe);
    *ready = false;
    if (one_sided_[p]) {
      if (awaiting_[p].load(std::memory_order_relaxed) > 0) TSHMEM_CHECK(reap());
      if (awaiting_[p].load(std::memory_order_relaxed) > 0) return TSHMEM_SUCCESS;
      if (!flushing_pe_[p]) {
        ucp_request_param_t param = {};
        flushing_pe_[p] = 1;
        const ucs_status_ptr_t r =
            worker_->issue(pe, [&param](ucp_ep_h ep, ucp_rkey_h) { return ucp_ep_flush_nbx(ep, &param); });
        TSHMEM_CHECK(track(r, pe, "a flush before a batch of small puts", 0, Waiter(), SIZE_MAX, 0));
        if (awaiting_[p].load(std::memory_order_relaxed) > 0) return TSHMEM_SUCCESS;
      }
      one_sided_[p] = 0;
      flushing_pe_[p] = 0;
    }
    *ready = true;
    return TSHMEM_SUCCESS;
  }

  // The transport's promise (transport.h): operations to one PE apply in the order issued. UCX orders one-sided
  // operations only across a fence (two puts to one word over shared memory may take different lanes and land
  // out of order), so one goes between every two operations of the proxy thread.
  Status order() {
    if (unordered_) TSHMEM_CHECK(fence());
    unordered_ = true;
    return TSHMEM_SUCCESS;
  }

  size_t take_slot() {
    const size_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }

  uint64_t oldest_seq() const {
    uint64_t oldest = UINT64_MAX;
    for (const InFlight &f : in_flight_) oldest = std::min(oldest, f.seq);
    return oldest;
  }

  // An operation issued: done at once (nullptr), failed, or in flight until reap() sees it complete.
  Status track(ucs_status_ptr_t r, int pe, const char *what, uint64_t dst, const Waiter &waiter, size_t slot,
               unsigned width, uint64_t bytes = 0) {
    worked_ = true;
    if (UCS_PTR_IS_ERR(r)) {
      if (slot != SIZE_MAX) free_slots_.push_back(slot);
      return set_error(TSHMEM_ERR_SYSTEM, "ucx: %s to PE %d could not be issued: %s", what, pe,
                       ucs_status_string(UCS_PTR_STATUS(r)));
    }
    InFlight f;
    f.request = r;
    f.seq = ++issued_;
    f.pe = pe;
    f.what = what;
    f.dst = dst;
    f.waiter = waiter;
    f.slot = slot;
    f.width = width;
    f.bytes = bytes;
    if (r == nullptr) return complete(f);
    f.since = Clock::now();
    awaiting_[static_cast<size_t>(pe)].fetch_add(1, std::memory_order_relaxed);
    in_flight_.push_back(f);
    return TSHMEM_SUCCESS;
  }

  // A completed operation: a fetched value goes to its destination, a waiter learns of it, its slot is free.
  Status complete(const InFlight &f) {
    if (f.dst != 0 && f.slot != SIZE_MAX) {
      bool queued = false;
      void *dst = reinterpret_cast<void *>(f.dst);
      TSHMEM_CHECK(memory_.copy(kOriginLane, dst, &slots_[f.slot].reply, f.width, &queued));
      if (queued) {  // a destination in device memory (the GPUDirect mode): a few bytes, waited for here
        uint64_t point = 0;
        TSHMEM_CHECK(memory_.mark(kOriginLane, &point));
        for (bool done = false; !done;) TSHMEM_CHECK(memory_.passed(kOriginLane, point, &done));
      }
    }
    if (f.dst != 0) sink_.delivered(f.dst, f.bytes, f.waiter);
    if (f.slot != SIZE_MAX) free_slots_.push_back(f.slot);
    return TSHMEM_SUCCESS;
  }

  Status reap() {
    for (size_t i = 0; i < in_flight_.size();) {
      InFlight &f = in_flight_[i];
      const ucs_status_t s = ucp_request_check_status(f.request);
      if (s == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      ucp_request_free(f.request);
      awaiting_[static_cast<size_t>(f.pe)].fetch_sub(1, std::memory_order_relaxed);
      const InFlight done = f;
      in_flight_[i] = in_flight_.back();
      in_flight_.pop_back();
      worked_ = true;
      if (s == UCS_ERR_CANCELED && !worker_->cancelled(done.pe).empty())  // a host call's bound expired on that PE
        return set_error(TSHMEM_ERR_TIMEOUT, "ucx: %s to PE %d was cancelled: an earlier bound expired (%s)", done.what,
                         done.pe, worker_->cancelled(done.pe).c_str());
      if (s != UCS_OK)
        return set_error(TSHMEM_ERR_SYSTEM, "ucx: %s to PE %d failed: %s", done.what, done.pe, ucs_status_string(s));
      TSHMEM_CHECK(complete(done));
    }
    return TSHMEM_SUCCESS;
  }

  Status post_control(int i) {
    posted_.push_back(i);
    return messenger_->irecv(control_[static_cast<size_t>(i)].data(), capacity_,
                             &control_requests_[static_cast<size_t>(i)]);
  }

  // What peers send, in the order UCX matched it (the order posted): stop notices, acknowledgements of this PE's
  // batches, batches from other PEs; anything else is refused.
  Status poll_control() {
    while (!posted_.empty()) {
      const int i = posted_.front();
      bool done = false;
      int source = -1;
      size_t bytes = 0;
      TSHMEM_CHECK(messenger_->test(&control_requests_[static_cast<size_t>(i)], &done, &source, &bytes));
      if (!done) break;
      posted_.pop_front();
      const char *message = control_[static_cast<size_t>(i)].data();
      // A PE of the job: batches and their acknowledgements may come from this PE itself (a request to itself).
      const bool peer = source >= 0 && source < worker_->n_pes();
      wire::Record record;
      if (wire::is_control(message, bytes, &record) && peer) {
        if (record.kind == wire::kGone) {
          if (source != worker_->my_pe()) sink_.peer_stopped(source);
        } else if (batches_) {
          batches_->acknowledged(source, record.value);
        } else {
          refuse(source, record, "an acknowledgement of batches this PE does not send (GPU heap: one-sided only)");
        }
      } else {
        apply(source, peer, message, bytes);
      }
      TSHMEM_CHECK(post_control(i));
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  void refuse(int source, const wire::Record &record, const char *rule) {
    sink_.message_refused(wire::record_refusal(worker_->my_pe(), source, rule, record));
  }

  // A batch from `source`: its records in order, each access checked first (the target's guard of its heap,
  // whatever a peer sends); puts copied into the heap, SET signals stored after them (release: a reader that sees
  // the word sees the data before it). Acknowledged once handled, refused records included (the origin waits for it).
  void apply(int source, bool peer, const char *message, size_t bytes) {
    wire::Reader reader(message, bytes);
    wire::Record record;
    const char *at = nullptr, *rule = nullptr;
    while (reader.next(&record, &at, &rule)) {
      const bool put = record.kind == wire::kPut;
      const bool set = record.kind == wire::kSignal && record.amo == TSHMEMI_AMO_SET;
      const char *refused = nullptr;
      if (!batches_ || !peer || !(put || set)) {
        const bool reply =
            record.kind == wire::kGetReply || record.kind == wire::kAmoReply || record.kind == wire::kFlushAck;
        refused = reply ? "a reply that matches no request in flight (the ucx direct mode awaits none: its operations "
                          "are one-sided)"
                  : batches_ && peer
                      ? "a record the ucx direct mode does not take in a batch (puts and SET signals only)"
                      : "a message the ucx direct mode does not take (its operations are one-sided: no records)";
      } else if ((refused = wire::check_access(record, heap_bytes_)) == nullptr) {
        refused = wire::check_reserved(record, heap_bytes_);
      }
      if (refused != nullptr) {
        refuse(source, record, refused);
        continue;
      }
      // Through the proxy's memory (host memory here: batches are for a host heap), as the staged target applies.
      if (put) {
        memory_.apply_put(heap_ + record.offset, at + wire::kHeader, record.bytes);
        std::atomic_thread_fence(std::memory_order_release);  // the records after it show after it
      } else {
        memory_.apply_store(heap_ + record.offset, wire::value_at(at), 8);
      }
    }
    if (rule != nullptr) refuse(source, record, rule);
    if (bytes == 0 && rule == nullptr) refuse(source, wire::Record(), "an empty message");
    if (batches_ && peer) batches_->applied(source);
  }

  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Messenger> messenger_;
  ProxyMemory &memory_;
  TransportSink &sink_;
  std::string path_;
  std::chrono::milliseconds bound_;
  size_t capacity_;
  char *heap_;  ///< this PE's heap: batches from other PEs are applied here
  uint64_t heap_bytes_;
  bool worked_ = false;
  uint64_t application_seen_ = 0;  ///< Worker::application_progress() at the last progress()
  bool driven_ = false;            ///< an application thread spins progressing the worker (progress())
  Clock::time_point last_pass_;    ///< of progress()
  /// An application thread that progresses the worker at least this often drives it (progress()).
  static constexpr std::chrono::microseconds kDrivenPollEvery{10};
  bool unordered_ = false;  ///< an operation was issued since the last fence
  std::vector<Slot> slots_;
  std::vector<size_t> free_slots_;
  std::vector<InFlight> in_flight_;
  uint64_t issued_ = 0;
  ucs_status_ptr_t flush_ = nullptr;
  bool flushing_ = false;
  Clock::time_point flush_since_;
  std::vector<std::atomic<uint32_t>> awaiting_;  ///< per PE: operations in flight; for waiting_on(), any thread
  std::vector<uint8_t> one_sided_;               ///< per PE: one-sided operations issued since its last endpoint flush
  std::vector<uint8_t> flushing_pe_;             ///< per PE: that flush is issued
  std::unique_ptr<Batches> batches_;             ///< small puts and SET signals in batches (a host heap), else nullptr
  std::unique_ptr<BulkPuts> bulk_;               ///< large host puts by rendezvous (a host heap), else nullptr
  std::vector<std::vector<char>> control_;
  std::vector<Messenger::Request> control_requests_;
  std::deque<int> posted_;                   ///< control receives in the order posted
  const wire::Record notice_;                ///< the stop notice (wire::gone)
  std::vector<Control> notices_;             ///< per PE: its notice's send
  std::vector<std::atomic<bool>> notified_;  ///< per PE: its notice was sent (or tried)
};

}  // namespace

Status make_direct(std::unique_ptr<Worker> worker, const TransportInputs &in, const std::string &path,
                   std::unique_ptr<Transport> *out) {
  auto direct = std::make_unique<Direct>(std::move(worker), in, path);
  TSHMEM_CHECK(direct->create());
  *out = std::move(direct);
  return TSHMEM_SUCCESS;
}

}  // namespace ucx
}  // namespace tshmemi
