// The direct mode's batches (host-memory heap): the proxy thread's small puts and SET signals to one PE travel as
// records (wire.h) packed into one tagged message per PE and pass, which the target's proxy applies in order with
// the CPU and acknowledges with a credit record. Issued one-sided, each `p` of a kernel would be a UCX operation of
// its own, fenced from the one before: where UCX emulates one-sided operations (no RDMA: shared memory into memory it
// did not allocate, tcp) each is a round trip through the target's worker. A batch is one message and one
// acknowledgement for up to wire::kBatchBytes of records (72 `p`s).
//
// Ordering (transport.h: the operations to one PE apply in the order issued), kept by the direct mode with these
// parts: batches to one PE are tagged messages on one endpoint, matched in the order sent and applied in the order
// matched; a one-sided operation to a PE waits until every batch to it is acknowledged (applied there); a batch to a
// PE waits until the one-sided operations issued to it before are complete there (an endpoint flush).
// Flow control: at most kUnackedBatches per PE await acknowledgement, so what piles up unmatched at a target is
// bounded per origin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/messenger.h"
#include "transport/wire.h"

namespace tshmemi {
namespace ucx {

class Batches {
 public:
  /// Batches sent to one PE that it has not acknowledged yet, at most.
  static constexpr int kUnackedBatches = 8;
  /// A target acknowledges a PE's batches once this many are owed, or at the first pass that brought none of them
  /// (the stream paused: the origin may be waiting): a stream of batches costs one acknowledgement per kAckEvery.
  static constexpr int kAckEvery = kUnackedBatches / 2;
  /// Send buffers of wire::Message::batch_limit bytes, shared by all PEs.
  static constexpr int kBuffers = 16;

  /// `limit`: the most bytes of one batch. `messenger` outlives the batches.
  Batches(Messenger &messenger, int n_pes, int my_pe, size_t limit);
  /// Sends still in flight are released (their buffers stay allocated: the network may still read them).
  ~Batches();

  // --- origin (the proxy thread) ---

  /// The most bytes of one batch (of one record: a record is never split).
  size_t limit() const { return limit_; }
  /// Room for a record of `bytes` (at most limit()) to `pe` in its open batch, or in a new one: *at, nullptr while
  /// `pe` has kUnackedBatches awaiting acknowledgement or no buffer is free (call again after progress).
  Status open_record(int pe, size_t bytes, char **at);
  /// Hands `pe`'s open batch to the network.
  Status send(int pe);
  /// Hands every open batch to the network (the end of the proxy thread's pass).
  Status send_open();
  /// Nothing open or unacknowledged to `pe`.
  bool settled(int pe) const { return open_[static_cast<size_t>(pe)] < 0 && unacked_[static_cast<size_t>(pe)] == 0; }
  /// Nothing open or unacknowledged to any PE; any thread (a host quiet waits for it).
  bool settled() const { return outstanding_.load(std::memory_order_acquire) == 0; }
  /// A batch is open or a send has not completed locally (nothing wakes an idle thread for those).
  bool sending() const { return !open_list_.empty() || in_flight_ > 0; }
  /// `pe` acknowledged `count` more batches (a credit record); more than it was sent are ignored.
  void acknowledged(int pe, uint64_t count);

  // --- target (the proxy thread) ---

  /// A batch from `source` was handled: acknowledged by send_acks() (kAckEvery).
  void applied(int source);
  /// Once per pass, after what arrived was applied: sends the acknowledgements due (kAckEvery) to each PE whose slot
  /// is free (the rest go on a later pass).
  Status send_acks();

  /// Frees the buffers of sends that have completed.
  Status reap();

  /// The message that stops the off-node path when a PE has not acknowledged a batch for longer than `bound`;
  /// empty when none.
  std::string overdue(std::chrono::milliseconds bound) const;
  /// PEs with batches awaiting acknowledgement ("1, 3"), for a timeout's message; any thread.
  std::string waiting_on() const;

 private:
  using Clock = std::chrono::steady_clock;

  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t bytes = 0;
    Messenger::Request request;
  };
  /// The slot of an acknowledgement to one PE (a control record: it needs no credit).
  struct Ack {
    wire::Record record;
    Messenger::Request request;
  };

  Messenger &msg_;
  int my_pe_;
  size_t limit_;
  std::vector<Buffer> buffers_;
  std::vector<int> free_;                     ///< buffers neither open nor in flight
  int in_flight_ = 0;                         ///< buffers handed to the network, not complete yet
  std::vector<int> open_;                     ///< per PE: its open batch's buffer, or -1
  std::vector<int> open_list_;                ///< PEs with an open batch
  std::vector<int> unacked_;                  ///< per PE: batches sent, not acknowledged
  std::vector<Clock::time_point> since_;      ///< per PE: when its oldest unacknowledged batch was sent
  std::vector<std::atomic<uint32_t>> shown_;  ///< per PE: unacked_, for waiting_on() on any thread
  std::atomic<uint64_t> outstanding_{0};      ///< batches open or unacknowledged, all PEs
  std::vector<uint64_t> owed_;                ///< per PE: batches handled, not acknowledged yet
  std::vector<uint8_t> arrived_;              ///< per PE: a batch of it was handled in this pass
  std::vector<int> owing_;                    ///< PEs owed an acknowledgement
  std::unique_ptr<Ack[]> acks_;               ///< per PE
  int n_pes_;
};

}  // namespace ucx
}  // namespace tshmemi
