// The staged protocol at the origin: operations become records in send buffers, handed to the messenger in the
// order they were assembled (the outbox), each once the copies into it are complete.
#include "transport/staged/staged.h"

namespace tshmemi {
namespace staged {

Status StagedTransport::put(const PutOp &op, uint64_t *done) {
  while (*done < op.bytes) {
    const uint64_t piece = wire::piece(op.bytes, *done, chunk_);
    const bool small = wire::Message::small(piece);
    char *record = nullptr;
    TSHMEM_CHECK(open_record(op.pe, wire::record_bytes(piece), small, &record));
    if (record == nullptr) return TSHMEM_SUCCESS;
    char *payload = wire::write(record, wire::put(op.offset + *done, piece));
    const char *src = static_cast<const char *>(op.src) + *done;
    if (op.immediate || op.host_src) {  // host memory: the CPU's copy, no GPU engine and no CUDA call
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

Status StagedTransport::get(const GetOp &op, uint64_t *done) {
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

Status StagedTransport::amo(const AmoOp &op, bool *issued) {
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

Status StagedTransport::signal(const SignalOp &op, bool *issued) {
  TSHMEM_CHECK(small_record(op.pe, wire::signal(op.offset, op.kind, op.value), issued));
  if (!*issued) return TSHMEM_SUCCESS;
  mark_dirty(op.pe);
  worked_ = true;
  return TSHMEM_SUCCESS;
}

Status StagedTransport::quiet(const Waiter &waiter, bool *complete) {
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

Status StagedTransport::reap_sends() {
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

Status StagedTransport::seal(Outgoing &o) {
  if (!o.open) return TSHMEM_SUCCESS;
  o.open = false;
  for (int lane : {kOriginLane, kTargetLane})
    if (o.copies[lane]) TSHMEM_CHECK(memory_.mark(static_cast<ProxyLane>(lane), &o.ready.lane[lane]));
  return TSHMEM_SUCCESS;
}

Status StagedTransport::open_record(int pe, size_t bytes, bool small, char **out) {
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

Status StagedTransport::small_record(int pe, const wire::Record &record, bool *placed) {
  char *at = nullptr;
  TSHMEM_CHECK(open_record(pe, wire::kHeader, true, &at));
  *placed = at != nullptr;
  if (at != nullptr) wire::write(at, record);
  return TSHMEM_SUCCESS;
}

Status StagedTransport::send_ready() {
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
    send_pe_[static_cast<size_t>(o.buffer)] = o.pe;
    send_since_[static_cast<size_t>(o.buffer)] = Clock::now();
    sent_seq_ = o.seq;
    outbox_.pop_front();
    worked_ = true;
  }
  return TSHMEM_SUCCESS;
}

void StagedTransport::mark_dirty(int pe) {
  if (!dirty_[static_cast<size_t>(pe)]) {
    dirty_[static_cast<size_t>(pe)] = 1;
    dirty_list_.push_back(pe);
  }
}

}  // namespace staged
}  // namespace tshmemi
