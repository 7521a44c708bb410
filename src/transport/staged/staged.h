// The staged protocol's parts, shared by the files of this folder only: origin.cc (operations, the outbox),
// target.cc (applying what arrives, answering), replies.cc (the table of replies this PE awaits, and the bounds on
// it), flow_control.cc (credits, the stop notice), staged_transport.cc (making and tearing down, progress).
// How the protocol works (a messenger carries it: MPI's or UCX's tag messages; "MPI" below is either).
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
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "transport/staged/staged_transport.h"
#include "transport/wire.h"

namespace tshmemi {
namespace staged {

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

class StagedTransport final : public Transport {
 public:
  StagedTransport(std::unique_ptr<Messenger> messenger, ProxyMemory &memory, const StagedConfig &config,
                  TransportSink &sink);

  // After close() nothing is active; after a failed start, nothing was sent. After a failure a send may never
  // complete (its PE may be gone): it is released, and its buffer stays allocated (MPI may read it).
  ~StagedTransport() override;

  Status create();

  std::string path_of(int) const override { return "staged"; }  // the transport that carries it names the path

  // --- operations ---

  Status put(const PutOp &op, uint64_t *done) override;

  Status get(const GetOp &op, uint64_t *done) override;

  Status amo(const AmoOp &op, bool *issued) override;

  Status signal(const SignalOp &op, bool *issued) override;

  Status fence() override { return TSHMEM_SUCCESS; }  // messages to one PE apply in the order sent

  Status quiet(const Waiter &waiter, bool *complete) override;

  // What the operations since the last call assembled goes now; then arrivals and replies.
  Status progress(bool *worked) override;

  uint64_t issued() const override { return last_seq_; }
  uint64_t released() const override { return sent_seq_; }

  // --- bounds and failure ---

  std::string overdue(std::chrono::milliseconds bound) override;

  std::string waiting_on() const override;

  // Best effort: a PE whose notice cannot be sent at once learns of the failure by its own bound.
  void tell_stopped() override;

  void close() override;
  /// Withdraws the posted receives (teardown); those the messenger could not withdraw keep their buffers.
  void withdraw_receives();

  Status send_raw(int pe, const void *message, size_t bytes) override;

 private:
  /// Credits are returned once this many messages of a PE have been handled (half of what it may send).
  static constexpr int kCreditReturn = kProxyCreditsPerPeer / 2;
  static_assert((kProxyMaxPending & (kProxyMaxPending - 1)) == 0, "reply ids keep the table index in low bits");

  // --- the outbox: messages in the order they go to MPI ---

  Status reap_sends();

  Status seal(Outgoing &o);

  // Room for a record of `bytes` to `pe`: in the open batch to `pe` when it may join one (wire::Message), else in
  // a new message (nullptr while every send buffer is busy). The record then belongs to outbox_.back().
  Status open_record(int pe, size_t bytes, bool small, char **out);

  // A record without payload to `pe` (joins a batch); *placed false while no send buffer is free.
  Status small_record(int pe, const wire::Record &record, bool *placed);

  bool passed(const Point &point, const bool copies[2], Status *status);

  // Hands sealed messages whose copies are complete to MPI, in order (up to one still being assembled). Called as
  // soon as a chunk is sealed too: where copies are the CPU's (host memory) the chunk is in MPI before the next
  // one is copied.
  Status send_ready();

  void mark_dirty(int pe);

  // --- arrivals ---

  Status post_receive(int buffer);

  // Handles arrived messages in the order MPI matched them; a buffer goes back to MPI once the copies out of it
  // have completed (in arrival order: each lane completes in order).
  Status poll_receives();

  void refuse(int source, const wire::Record &record, const char *rule);

  // Applies the records of one message in order. *control: it was a control message (credits, a stop notice),
  // which costs its sender no credit.
  Status handle(int source, const char *message, size_t bytes, Arrived *a, bool *control);

  // One record of a message from `source`, at `at` in its receive buffer. Its heap access is checked first
  // (wire::check_access: the target's guard of its memory, whatever a peer sends).
  Status handle_record(int source, const wire::Record &w, const char *at, Arrived *a);

  // --- the replies this PE awaits ---

  int pending() const { return kProxyMaxPending - static_cast<int>(free_expected_.size()); }

  // The id the next expect() hands out (the caller checked that an entry is free): the entry's index in the low
  // bits, a count above them, so that a stale or forged id does not match a reused entry.
  uint64_t peek_expected_id() const;

  void expect(int pe, uint32_t kind, uint64_t token, uint64_t bytes, const Waiter &waiter);

  const Expected *match_reply(int source, const wire::Record &w) const;

  void release_expected(uint64_t id);

  // --- flow control and control messages ---

  // One more message of `source` handled: its credit goes back once enough are owed.
  void owe_credit(int source);

  // Sends the credits owed to each PE whose control slot is free (the rest go on a later pass).
  Status return_credits();

  Status handle_control(int source, const wire::Record &record);

  // Replies join the outbox once what they wait for is in the heap; a get's data is read on the target lane,
  // after every put applied before it.
  Status serve_replies();

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
  std::vector<bool> recv_held_;  ///< receive buffers a message may still land in after the teardown (leaked)
  std::vector<int> free_;        ///< send buffers not in use
  std::vector<int> in_flight_;   ///< send buffers handed to MPI
  std::vector<int> send_pe_;     ///< per send buffer in flight: the PE it goes to
  std::vector<Clock::time_point> send_since_;  ///< per send buffer in flight: when it was handed to MPI
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

}  // namespace staged
}  // namespace tshmemi
