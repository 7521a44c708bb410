// The staged protocol at the target: what arrives is applied in the order sent, and answered through a queue.
#include "transport/staged/staged.h"

namespace tshmemi {
namespace staged {

Status StagedTransport::post_receive(int buffer) {
  TSHMEM_CHECK(
      msg_->irecv(recv_[static_cast<size_t>(buffer)], capacity_, &recv_requests_[static_cast<size_t>(buffer)]));
  posted_.push_back(buffer);
  return TSHMEM_SUCCESS;
}

Status StagedTransport::poll_receives() {
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
      sink_.delivered(e.token, e.bytes, e.waiter);
      release_expected(e.id);
    }
    TSHMEM_CHECK(post_receive(a.buffer));
    arrived_.pop_front();
    worked_ = true;
  }
  return TSHMEM_SUCCESS;
}

void StagedTransport::refuse(int source, const wire::Record &record, const char *rule) {
  sink_.message_refused(wire::record_refusal(my_pe_, source, rule, record));
}

Status StagedTransport::handle(int source, const char *message, size_t bytes, Arrived *a, bool *control) {
  wire::Record record;
  *control = wire::is_control(message, bytes, &record);
  if (*control) return handle_control(source, record);
  wire::Reader reader(message, bytes);
  const char *at = nullptr, *rule = nullptr;
  while (reader.next(&record, &at, &rule)) TSHMEM_CHECK(handle_record(source, record, at, a));
  if (rule != nullptr) refuse(source, record, rule);
  return TSHMEM_SUCCESS;
}

Status StagedTransport::handle_record(int source, const wire::Record &w, const char *at, Arrived *a) {
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
      if (w.bytes == 0) return TSHMEM_SUCCESS;  // a signal's put without data: its offset may be anything
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
      if (data_bytes > 0 && (e->waiter.tag != 0 || e->waiter.host)) {
        // A result slot (a g, a fetched value) or a kernel's staging lies in host memory: the CPU's copy, no CUDA
        // call.
        std::memcpy(reinterpret_cast<void *>(e->token), data, data_bytes);
      } else if (data_bytes > 0) {
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

Status StagedTransport::serve_replies() {
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

}  // namespace staged
}  // namespace tshmemi
