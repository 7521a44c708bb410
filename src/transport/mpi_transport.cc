// The off-node proxy's transport over two-sided MPI, staged through host memory.
//
// A message is a sequence of records (wire.h). Small records to one PE issued in one pass travel as one message
// (a batch): a kernel's many `p`s cost one MPI message, not one each. A larger put is cut into chunks of at most
// `chunk` bytes, one message each.
// Origin: messages are assembled in send buffers and handed to MPI strictly in the order they were assembled (the
// outbox), each once the copies into it (device->host on a GPU) have completed. Copies are asynchronous
// (ProxyMemory lanes), so the copy of one chunk overlaps the transfer of the ones before it and the thread keeps
// driving MPI. An operation's source is released once the message holding the last of its data has been handed to
// MPI. A quiet sends a FLUSH record to every PE written since the last one and completes when every awaited reply
// has come back.
// Target: receives land in a FIFO of pre-posted buffers and are handled in the order MPI matched them, so the
// messages of one origin apply in the order it sent them (MPI's non-overtaking rule), and the records of a
// message in their order: puts in order, a signal after its data, a FLUSH acknowledged only after everything
// before it is in the heap. A buffer goes back to MPI once the copies out of it have completed. Replies go through
// a queue, so handling a message never waits for a send buffer (two proxies that both wait to send would
// otherwise deadlock). Every reply is checked against the table of replies this PE awaits and takes its
// destination from that table, never from the message.
// Flow control: a PE may have at most kProxyCreditsPerPeer messages to one PE that the target has not handled yet
// (credits). The target returns credits once it has handled messages, on a small control slot per PE that never
// waits for credits itself, so what piles up unmatched in MPI at a target is bounded per origin even where eager
// sends complete locally.
#include "transport/mpi_transport.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "transport/wire.h"

namespace tshmemi {
namespace {

/// Fetched values (an atomic's old value) a target writes before it sends them, without waiting.
constexpr uint64_t kAmoSlots = 1024;

using Clock = std::chrono::steady_clock;

/// A point on both lanes of ProxyMemory (0: nothing to wait for).
struct Point {
  uint64_t lane[2] = {0, 0};
};

/// A message being assembled or waiting for its copies: records to one PE in one send buffer.
struct Outgoing : wire::Message {
  int buffer = -1;
  uint64_t seq = 0;     ///< messages are handed to MPI in this order
  bool copies[2] = {};  ///< copies into it were issued on a lane
  Point ready;          ///< set when sealed: those copies are complete once it has passed
};

/// A reply this PE awaits (get data, a fetched value, a flush acknowledgement). A reply is accepted only if it
/// matches an entry (id, PE, kind, size); its data goes where the entry says.
struct Expected {
  uint64_t id = 0;     ///< 0: the entry is free
  int pe = -1;         ///< the PE the reply must come from
  uint32_t kind = 0;   ///< kGetReply, kAmoReply or kFlushAck
  uint64_t token = 0;  ///< where its data or value goes
  uint64_t bytes = 0;  ///< data bytes (kGetReply) or the value's width (kAmoReply)
  Waiter waiter;
  Clock::time_point since;
};

/// A handled receive buffer, back to MPI once the copies out of it have completed.
struct Arrived {
  int buffer = -1;
  bool copies[2] = {};
  Point ready;
  std::vector<Expected> results;  ///< replies whose data or value were copied out: then delivered, and one reply less
};

/// A small send slot of its own per PE for control records (credits, the stop notice): never waits for a send
/// buffer or for credits, so credits flow however full the outbox is.
struct Control {
  wire::Record record;
  Messenger::Request request;
};

struct Reply {
  int pe;
  wire::Record record;
  Point ready;                         ///< sent once what was applied before it (and its atomic) is complete
  const uint64_t *value_at = nullptr;  ///< a fetched value still being written there (an atomic's old value)
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const MpiTransportConfig &config,
               TransportSink &sink)
      : msg_(std::move(messenger)),
        memory_(memory),
        sink_(sink),
        heap_(config.heap),
        heap_bytes_(config.heap_bytes),
        chunk_(config.chunk_bytes),
        capacity_(wire::message_capacity(config.chunk_bytes)),
        batch_bytes_(wire::Message::batch_limit(capacity_)),
        my_pe_(config.my_pe),
        n_pes_(config.n_pes),
        dirty_(static_cast<size_t>(config.n_pes), 0),
        credits_(static_cast<size_t>(config.n_pes), kProxyCreditsPerPeer),
        owed_(static_cast<size_t>(config.n_pes), 0),
        credit_slots_(static_cast<size_t>(config.n_pes)),
        notice_slots_(static_cast<size_t>(config.n_pes)),
        awaiting_(static_cast<size_t>(config.n_pes)) {
    for (int i = kProxyMaxPending - 1; i >= 0; --i) free_expected_.push_back(i);
  }

  // After close() nothing is active; after a failed start, nothing was sent. After a failure a send may never
  // complete (its PE may be gone): it is released, and its buffer stays allocated (MPI may read it).
  ~MpiTransport() override {
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
      memory_.free_staging(send_[i]);
    }
    for (char *b : recv_) memory_.free_staging(b);
    if (amo_slots_ != nullptr) memory_.free_staging(amo_slots_);
    if (leak) TSHMEMI_LOG(kInfo, kLogInit, "off-node proxy: control sends still in flight at teardown were released");
  }

  Status create() {
    send_.assign(kProxySendBuffers, nullptr);
    recv_.assign(kProxyRecvBuffers, nullptr);
    send_requests_.resize(kProxySendBuffers);
    recv_requests_.resize(kProxyRecvBuffers);
    for (char *&b : send_) TSHMEM_CHECK(memory_.alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
    for (char *&b : recv_) TSHMEM_CHECK(memory_.alloc_staging(capacity_, reinterpret_cast<void **>(&b)));
    for (int i = 0; i < kProxySendBuffers; ++i) free_.push_back(i);
    TSHMEM_CHECK(memory_.alloc_staging((kAmoSlots + 1) * sizeof(uint64_t), reinterpret_cast<void **>(&amo_slots_)));
    for (int i = 0; i < kProxyRecvBuffers; ++i) TSHMEM_CHECK(post_receive(i));
    return TSHMEM_SUCCESS;
  }

  // --- operations ---

  Status put(const PutOp &op, uint64_t *done) override {
    while (*done < op.bytes) {
      const uint64_t piece = wire::piece(op.bytes, *done, chunk_);
      const bool small = wire::Message::small(piece);
      char *record = nullptr;
      TSHMEM_CHECK(open_record(op.pe, wire::record_bytes(piece), small, &record));
      if (record == nullptr) return TSHMEM_SUCCESS;
      char *payload = wire::write(record, wire::put(op.offset + *done, piece));
      const char *src = static_cast<const char *>(op.src) + *done;
      if (op.immediate) {
        std::memcpy(payload, src, piece);
      } else {
        bool queued = false;
        TSHMEM_CHECK(memory_.copy(kOriginLane, payload, src, piece, &queued));
        outbox_.back().copies[kOriginLane] |= queued;
      }
      if (!small) {
        TSHMEM_CHECK(seal(outbox_.back()));
        TSHMEM_CHECK(send_ready());
        TSHMEM_CHECK(reap_sends());  // MPI progresses the chunks in flight between two copies
      }
      *done += piece;
      mark_dirty(op.pe);
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  Status get(const GetOp &op, uint64_t *done) override {
    while (*done < op.bytes) {
      if (free_expected_.empty()) return TSHMEM_SUCCESS;
      const uint64_t piece = wire::piece(op.bytes, *done, chunk_);
      bool placed = false;
      TSHMEM_CHECK(small_record(op.pe, wire::get(op.offset + *done, piece, peek_expected_id()), &placed));
      if (!placed) return TSHMEM_SUCCESS;
      expect(op.pe, wire::kGetReply, op.dst + *done, piece, op.waiter);
      *done += piece;
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  Status amo(const AmoOp &op, bool *issued) override {
    *issued = false;
    const bool fetching = amo_kind::fetches(op.kind);
    if (fetching && free_expected_.empty()) return TSHMEM_SUCCESS;
    const wire::Record record =
        wire::amo(op.offset, op.kind, op.width, op.value, op.compare, fetching ? peek_expected_id() : 0);
    TSHMEM_CHECK(small_record(op.pe, record, issued));
    if (!*issued) return TSHMEM_SUCCESS;
    if (fetching) expect(op.pe, wire::kAmoReply, op.dst, op.width, op.waiter);
    mark_dirty(op.pe);
    worked_ = true;
    return TSHMEM_SUCCESS;
  }

  Status signal(const SignalOp &op, bool *issued) override {
    TSHMEM_CHECK(small_record(op.pe, wire::signal(op.offset, op.kind, op.value), issued));
    if (!*issued) return TSHMEM_SUCCESS;
    mark_dirty(op.pe);
    worked_ = true;
    return TSHMEM_SUCCESS;
  }

  Status fence() override { return TSHMEM_SUCCESS; }  // messages to one PE apply in the order sent

  Status quiet(const Waiter &waiter, bool *complete) override {
    *complete = false;
    while (!dirty_list_.empty()) {
      if (free_expected_.empty()) return TSHMEM_SUCCESS;
      const int pe = dirty_list_.back();
      bool placed = false;
      TSHMEM_CHECK(small_record(pe, wire::flush(peek_expected_id()), &placed));
      if (!placed) return TSHMEM_SUCCESS;
      Waiter acknowledged;
      acknowledged.kernel = waiter.kernel;
      expect(pe, wire::kFlushAck, 0, 0, acknowledged);
      dirty_list_.pop_back();
      dirty_[static_cast<size_t>(pe)] = 0;
      worked_ = true;
    }
    *complete = pending() == 0;
    return TSHMEM_SUCCESS;
  }

  // What the operations since the last call assembled goes now; then arrivals and replies.
  Status progress(bool *worked) override {
    if (!outbox_.empty()) TSHMEM_CHECK(seal(outbox_.back()));
    if (!owing_.empty()) TSHMEM_CHECK(return_credits());
    TSHMEM_CHECK(reap_sends());
    TSHMEM_CHECK(send_ready());
    TSHMEM_CHECK(poll_receives());
    TSHMEM_CHECK(serve_replies());
    if (worked_) *worked = true;
    worked_ = false;
    return TSHMEM_SUCCESS;
  }

  uint64_t issued() const override { return last_seq_; }
  uint64_t released() const override { return sent_seq_; }

  // --- bounds and failure ---

  std::string overdue(std::chrono::milliseconds bound) override {
    const Clock::time_point now = Clock::now();
    const Expected *oldest = nullptr;
    for (const Expected &e : expected_)
      if (e.id != 0 && (oldest == nullptr || e.since < oldest->since)) oldest = &e;
    if (oldest != nullptr && now - oldest->since > bound) {
      const char *what = oldest->kind == wire::kFlushAck   ? "the acknowledgement of a quiet"
                         : oldest->kind == wire::kAmoReply ? "the old value of a fetching atomic"
                         : oldest->waiter.tag != 0         ? "the value of a g"
                                                           : "the data of a get";
      return format(
          "%s%s from PE %d has not come for %lld ms (TSHMEM_PROXY_TIMEOUT_MS); the off-node path of PE %d "
          "is stopped",
          oldest->waiter.kernel ? "for a kernel, " : "", what, oldest->pe, static_cast<long long>(bound.count()),
          my_pe_);
    }
    const int blocked = credit_blocked_pe_.load(std::memory_order_relaxed);
    if (blocked >= 0 && now - credit_blocked_since_ > bound)
      return format(
          "PE %d has not handled PE %d's messages for %lld ms (TSHMEM_PROXY_TIMEOUT_MS: no credits, so "
          "nothing more goes out: the channels fill); the off-node path of PE %d is stopped",
          blocked, my_pe_, static_cast<long long>(bound.count()), my_pe_);
    return std::string();
  }

  std::string waiting_on() const override {
    std::string replies;
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

  // Best effort: a PE whose notice cannot be sent at once learns of the failure by its own bound.
  void tell_stopped() override {
    for (int pe = 0; pe < n_pes_; ++pe) {
      if (pe == my_pe_) continue;
      Control &c = notice_slots_[static_cast<size_t>(pe)];
      c.record = wire::gone();
      (void)msg_->isend(&c.record, wire::kHeader, pe, &c.request);
    }
  }

  void close() override {
    for (Messenger::Request &r : recv_requests_) msg_->cancel(&r);
  }

  Status send_raw(int pe, const void *message, size_t bytes) override {
    Messenger::Request request;
    TSHMEM_CHECK(msg_->isend(message, bytes, pe, &request));
    for (bool done = false; !done;) TSHMEM_CHECK(msg_->test(&request, &done));
    return TSHMEM_SUCCESS;
  }

 private:
  /// Credits are returned once this many messages of a PE have been handled (half of what it may send).
  static constexpr int kCreditReturn = kProxyCreditsPerPeer / 2;
  static_assert((kProxyMaxPending & (kProxyMaxPending - 1)) == 0, "reply ids keep the table index in low bits");

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
      if (o.copies[lane]) TSHMEM_CHECK(memory_.mark(static_cast<ProxyLane>(lane), &o.ready.lane[lane]));
    return TSHMEM_SUCCESS;
  }

  // Room for a record of `bytes` to `pe`: in the open batch to `pe` when it may join one (wire::Message), else in
  // a new message (nullptr while every send buffer is busy). The record then belongs to outbox_.back().
  Status open_record(int pe, size_t bytes, bool small, char **out) {
    *out = nullptr;
    if (!outbox_.empty()) {
      Outgoing &last = outbox_.back();
      if (last.join(pe, bytes, small, batch_bytes_)) {
        *out = send_[static_cast<size_t>(last.buffer)] + last.bytes - bytes;
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

  // A record without payload to `pe` (joins a batch); *placed false while no send buffer is free.
  Status small_record(int pe, const wire::Record &record, bool *placed) {
    char *at = nullptr;
    TSHMEM_CHECK(open_record(pe, wire::kHeader, true, &at));
    *placed = at != nullptr;
    if (at != nullptr) wire::write(at, record);
    return TSHMEM_SUCCESS;
  }

  bool passed(const Point &point, const bool copies[2], Status *status) {
    for (int lane : {kOriginLane, kTargetLane}) {
      if (!copies[lane]) continue;
      bool done = false;
      *status = memory_.passed(static_cast<ProxyLane>(lane), point.lane[lane], &done);
      if (*status != TSHMEM_SUCCESS || !done) return false;
    }
    return true;
  }

  // Hands sealed messages whose copies are complete to MPI, in order (up to one still being assembled). Called as
  // soon as a chunk is sealed too: where copies are the CPU's (host memory) the chunk is in MPI before the next
  // one is copied.
  Status send_ready() {
    Status status = TSHMEM_SUCCESS;
    while (!outbox_.empty()) {
      Outgoing &o = outbox_.front();
      if (o.open) break;
      if (!passed(o.ready, o.copies, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      // Out of credits: the target has not handled this PE's earlier messages yet. Messages go in order, so the
      // outbox waits (the target returns credits whatever this PE does).
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
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  void mark_dirty(int pe) {
    if (!dirty_[static_cast<size_t>(pe)]) {
      dirty_[static_cast<size_t>(pe)] = 1;
      dirty_list_.push_back(pe);
    }
  }

  // --- arrivals ---

  Status post_receive(int buffer) {
    TSHMEM_CHECK(
        msg_->irecv(recv_[static_cast<size_t>(buffer)], capacity_, &recv_requests_[static_cast<size_t>(buffer)]));
    posted_.push_back(buffer);
    return TSHMEM_SUCCESS;
  }

  // Handles arrived messages in the order MPI matched them; a buffer goes back to MPI once the copies out of it
  // have completed (in arrival order: each lane completes in order).
  Status poll_receives() {
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
        if (a.copies[lane]) TSHMEM_CHECK(memory_.mark(static_cast<ProxyLane>(lane), &a.ready.lane[lane]));
      for (size_t i = first_reply; i < fresh_replies_.size(); ++i) {
        fresh_replies_[i].ready = a.ready;
        replies_.push_back(fresh_replies_[i]);
      }
      fresh_replies_.clear();
      worked_ = true;
    }
    Status status = TSHMEM_SUCCESS;
    while (!arrived_.empty()) {
      Arrived &a = arrived_.front();
      if (!passed(a.ready, a.copies, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      for (const Expected &e : a.results) {
        sink_.delivered(e.token, e.waiter);
        release_expected(e.id);
      }
      TSHMEM_CHECK(post_receive(a.buffer));
      arrived_.pop_front();
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  void refuse(int source, const wire::Record &record, const char *rule) {
    sink_.message_refused(wire::record_refusal(my_pe_, source, rule, record));
  }

  // Applies the records of one message in order. *control: it was a control message (credits, a stop notice),
  // which costs its sender no credit.
  Status handle(int source, const char *message, size_t bytes, Arrived *a, bool *control) {
    wire::Record record;
    *control = wire::is_control(message, bytes, &record);
    if (*control) return handle_control(source, record);
    wire::Reader reader(message, bytes);
    const char *at = nullptr, *rule = nullptr;
    while (reader.next(&record, &at, &rule)) TSHMEM_CHECK(handle_record(source, record, at, a));
    if (rule != nullptr) refuse(source, record, rule);
    return TSHMEM_SUCCESS;
  }

  // One record of a message from `source`, at `at` in its receive buffer. Its heap access is checked first
  // (wire::check_access: the target's guard of its memory, whatever a peer sends).
  Status handle_record(int source, const wire::Record &w, const char *at, Arrived *a) {
    const char *payload = at + wire::kHeader;
    Reply reply{source, wire::Record(), Point()};
    const char *rule = wire::check_access(w, heap_bytes_);
    if (rule == nullptr) rule = wire::check_reserved(w, heap_bytes_);
    switch (w.kind) {
      case wire::kPut:
        if (rule != nullptr) {
          refuse(source, w, rule);
          return TSHMEM_SUCCESS;
        }
        TSHMEM_CHECK(memory_.apply_put(heap_ + w.offset, payload, w.bytes));
        a->copies[kTargetLane] = true;
        return TSHMEM_SUCCESS;
      case wire::kSignal:
        if (rule != nullptr) {
          refuse(source, w, rule);
          return TSHMEM_SUCCESS;
        }
        // SET is a store (no kernel on a GPU); ADD is an atomic.
        if (w.amo == TSHMEMI_AMO_SET)
          TSHMEM_CHECK(memory_.apply_store(heap_ + w.offset, wire::value_at(at), 8));
        else
          TSHMEM_CHECK(memory_.apply_amo(heap_ + w.offset, w.amo, 8, w.value, 0, nullptr, false));
        a->copies[kTargetLane] = true;
        return TSHMEM_SUCCESS;
      case wire::kAmo: {
        const bool fetching = w.id != 0;
        reply.record = wire::amo_reply(w.id, w.width);
        if (rule == nullptr) {
          // A fetched value goes to a slot of its own and is sent once the atomic is done; with every slot taken
          // (as many unserved fetches), the thread waits for this one, in the spare slot at the end.
          uint64_t *old = nullptr;
          bool wait = false;
          if (fetching && amo_issued_ - amo_served_ < kAmoSlots) {
            old = amo_slots_ + amo_issued_++ % kAmoSlots;
            reply.value_at = old;
          } else if (fetching) {
            old = amo_slots_ + kAmoSlots;
            wait = true;
          }
          TSHMEM_CHECK(memory_.apply_amo(heap_ + w.offset, w.amo, w.width, w.value, w.compare, old, wait));
          if (wait) reply.record.value = *old;
          a->copies[kTargetLane] = true;
        } else {
          refuse(source, w, rule);
        }
        if (!fetching) return TSHMEM_SUCCESS;
        break;
      }
      case wire::kGet:
        // The reply carries the data in one message: at most a chunk.
        if (rule == nullptr && w.bytes > chunk_) rule = "get larger than a chunk";
        if (rule != nullptr) refuse(source, w, rule);  // replied to, empty
        reply.record = rule == nullptr ? wire::get_reply(w.id, w.offset, w.bytes) : wire::get_reply(w.id, 0, 0);
        break;
      case wire::kFlush:
        reply.record = wire::flush_ack(w.id);
        a->copies[kTargetLane] = true;  // acknowledged once everything applied before it is in the heap
        break;
      case wire::kGetReply:
      case wire::kAmoReply:
      case wire::kFlushAck: {
        // Only a reply this PE awaits is taken, and its data goes where this PE's table says.
        const Expected *e = match_reply(source, w);
        if (e == nullptr) {
          refuse(source, w, "a reply that matches no request in flight (its id, PE, kind or size)");
          return TSHMEM_SUCCESS;
        }
        if (w.kind == wire::kFlushAck) {
          release_expected(e->id);
          return TSHMEM_SUCCESS;
        }
        // A get the target refused comes back empty: nothing to copy, and the wait still ends.
        const uint64_t data_bytes = w.kind == wire::kGetReply ? w.bytes : e->bytes;
        const void *data = w.kind == wire::kGetReply ? static_cast<const void *>(payload)
                                                     : static_cast<const void *>(wire::value_at(at));
        if (data_bytes > 0) {
          // From the message buffer itself: it stays put until the copy is complete.
          bool queued = false;
          TSHMEM_CHECK(memory_.copy(kOriginLane, reinterpret_cast<void *>(e->token), data, data_bytes, &queued));
          a->copies[kOriginLane] |= queued;
        }
        a->results.push_back(*e);
        return TSHMEM_SUCCESS;
      }
      default: refuse(source, w, "unknown message kind"); return TSHMEM_SUCCESS;
    }
    fresh_replies_.push_back(reply);
    return TSHMEM_SUCCESS;
  }

  // --- the replies this PE awaits ---

  int pending() const { return kProxyMaxPending - static_cast<int>(free_expected_.size()); }

  // The id the next expect() hands out (the caller checked that an entry is free): the entry's index in the low
  // bits, a count above them, so that a stale or forged id does not match a reused entry.
  uint64_t peek_expected_id() const {
    return ((expected_serial_ + 1) * kProxyMaxPending) | static_cast<uint64_t>(free_expected_.back());
  }

  void expect(int pe, uint32_t kind, uint64_t token, uint64_t bytes, const Waiter &waiter) {
    const int index = free_expected_.back();
    free_expected_.pop_back();
    Expected &e = expected_[index];
    e.id = (++expected_serial_ * kProxyMaxPending) | static_cast<uint64_t>(index);
    e.pe = pe;
    e.kind = kind;
    e.token = token;
    e.bytes = bytes;
    e.waiter = waiter;
    e.since = Clock::now();
    awaiting_[static_cast<size_t>(pe)].fetch_add(1, std::memory_order_relaxed);
  }

  const Expected *match_reply(int source, const wire::Record &w) const {
    if (w.id == 0) return nullptr;
    const Expected &e = expected_[w.id & (kProxyMaxPending - 1)];
    if (e.id != w.id || e.pe != source || e.kind != w.kind) return nullptr;
    if (w.kind == wire::kGetReply && w.bytes != e.bytes && w.bytes != 0) return nullptr;
    if (w.kind == wire::kAmoReply && w.width != e.bytes) return nullptr;
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
      c.record = wire::credit(static_cast<uint64_t>(owed_[static_cast<size_t>(pe)]));
      owed_[static_cast<size_t>(pe)] = 0;
      TSHMEM_CHECK(msg_->isend(&c.record, wire::kHeader, pe, &c.request));
      owing_[i] = owing_.back();
      owing_.pop_back();
    }
    return TSHMEM_SUCCESS;
  }

  Status handle_control(int source, const wire::Record &record) {
    if (source < 0 || source >= n_pes_ || source == my_pe_) return TSHMEM_SUCCESS;
    if (record.kind == wire::kGone) {
      sink_.peer_stopped(source);  // it told every PE itself
      return TSHMEM_SUCCESS;
    }
    int &credits = credits_[static_cast<size_t>(source)];
    const uint64_t returned = std::min<uint64_t>(record.value, kProxyCreditsPerPeer);
    credits = std::min(kProxyCreditsPerPeer, credits + static_cast<int>(returned));
    return TSHMEM_SUCCESS;
  }

  // Replies join the outbox once what they wait for is in the heap; a get's data is read on the target lane,
  // after every put applied before it.
  Status serve_replies() {
    Status status = TSHMEM_SUCCESS;
    const bool target_copy[2] = {false, true};
    while (!replies_.empty()) {
      const Reply &reply = replies_.front();
      if (!passed(reply.ready, target_copy, &status)) {
        TSHMEM_CHECK(status);
        break;
      }
      const size_t payload = reply.record.kind == wire::kGetReply ? reply.record.bytes : 0;
      const bool small = wire::Message::small(payload);
      char *at = nullptr;
      TSHMEM_CHECK(open_record(reply.pe, wire::record_bytes(payload), small, &at));
      if (at == nullptr) break;
      wire::Record record = reply.record;
      if (reply.value_at != nullptr) {
        record.value = *reply.value_at;
        ++amo_served_;  // slots are taken and served in this queue's order
      }
      char *data = wire::write(at, record);
      if (payload > 0) {
        bool queued = false;
        TSHMEM_CHECK(memory_.copy(kTargetLane, data, heap_ + reply.record.offset, payload, &queued));
        outbox_.back().copies[kTargetLane] |= queued;
      }
      replies_.pop_front();
      if (!small) {
        TSHMEM_CHECK(seal(outbox_.back()));
        TSHMEM_CHECK(send_ready());
        TSHMEM_CHECK(reap_sends());
      }
      worked_ = true;
    }
    return TSHMEM_SUCCESS;
  }

  std::unique_ptr<Messenger> msg_;
  ProxyMemory &memory_;
  TransportSink &sink_;
  char *heap_;
  uint64_t heap_bytes_;
  uint64_t chunk_;
  size_t capacity_;     ///< bytes of each send and receive buffer: a header and a chunk
  size_t batch_bytes_;  ///< most bytes of a batch of small records
  int my_pe_, n_pes_;
  bool worked_ = false;  ///< something happened since the last progress()

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
  std::vector<uint8_t> dirty_;        ///< PEs written since the last quiet
  std::vector<int> dirty_list_;
  Expected expected_[kProxyMaxPending];  ///< the replies this PE awaits
  std::vector<int> free_expected_;       ///< free entries of expected_
  uint64_t expected_serial_ = 0;         ///< counts entries handed out (the high bits of their ids)
  std::vector<int> credits_;             ///< messages this PE may still send to each PE (flow control)
  std::vector<int> owed_;                ///< messages handled from each PE whose credit is not returned yet
  std::vector<int> owing_;               ///< PEs owed at least kCreditReturn
  std::vector<Control> credit_slots_;    ///< per PE: credits returned to it
  std::vector<Control> notice_slots_;    ///< per PE: the stop notice
  /// For a timeout's message, read by a waiting thread: replies awaited per PE, the PE out of credits.
  std::vector<std::atomic<uint32_t>> awaiting_;
  std::atomic<int> credit_blocked_pe_{-1};
  Clock::time_point credit_blocked_since_;  ///< when the outbox last found credit_blocked_pe_ out of credits
  uint64_t *amo_slots_ = nullptr;           ///< kAmoSlots fetched values being written, and a spare (staging memory)
  uint64_t amo_issued_ = 0, amo_served_ = 0;
};

}  // namespace

uint64_t mpi_transport_staging_bytes(uint64_t chunk_bytes) {
  const uint64_t buffers = uint64_t{kProxySendBuffers + kProxyRecvBuffers} * wire::message_capacity(chunk_bytes);
  return buffers + (kAmoSlots + 1) * sizeof(uint64_t);
}

uint64_t mpi_transport_reply_queue_bytes(int n_pes) {
  return uint64_t{static_cast<uint64_t>(n_pes)} * kProxyMaxPending * sizeof(Reply);
}

Status make_mpi_transport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const MpiTransportConfig &config,
                          TransportSink &sink, std::unique_ptr<Transport> *out) {
  auto transport = std::make_unique<MpiTransport>(std::move(messenger), memory, config, sink);
  TSHMEM_CHECK(transport->create());
  *out = std::move(transport);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
