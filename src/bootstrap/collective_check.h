// The collective check: every checked collective call (an allocation, a free, a barrier, a host-blocking
// collective, a team split, a registration, the multicast binding) ends with ONE allreduce of min and max over
// what this PE asked for. The call needs that synchronisation anyway (OpenSHMEM allocation ends with a barrier),
// so the check adds no collective. On a mismatch every PE gets the same status and a message naming the call,
// each divergent PE and what it asked for, argument by argument; the caller then rolls back, so nothing happens.
//
// The check knows no call: each part of tshmem describes its own calls in its own folder (a name and a few named
// arguments, CollectiveRequest below), and the check compares those descriptions.
//
// Configure with -DTSHMEM_SYMMETRY_CHECK=OFF to compile the comparison out: the allreduce then carries only the
// local status (PEs still agree on exhaustion and on argument errors).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

/// One argument of a checked call, by name: compared across PEs and shown as "name=value".
struct CallArg {
  const char *name = nullptr;  ///< a literal ("size", "team"); part of the call's identity
  int64_t value = 0;
};

/// What this PE asked for in one checked collective call.
struct CollectiveRequest {
  static constexpr int kMaxArgs = 4;

  /// `name` names the call in messages ("tshmem_malloc", "tshmem_broadcastmem") and, with its arguments'
  /// names, identifies it across PEs (every PE runs the same binary). A literal: the request keeps the pointer.
  explicit CollectiveRequest(const char *name) : call(name) {}

  /// Appends an argument (at most kMaxArgs; the order is part of the call's identity and of its message).
  CollectiveRequest &arg(const char *name, int64_t value) {
    if (n_args < kMaxArgs) args[n_args++] = {name, value};
    return *this;
  }

  const char *call;
  CallArg args[kMaxArgs];
  int n_args = 0;
  /// A heap (or registration) offset the call involves; -1: none.
  int64_t offset = -1;
  /// true: the offset names the object the call acts on (the block freed, a collective's dst), so it is part of
  /// the request; false: it is the call's result (where an allocation landed), the same on every PE unless the
  /// PEs' heaps have diverged.
  bool offset_is_argument = false;
  /// How messages introduce the offset: "-> offset 4096", "with dst at heap offset 4096".
  const char *offset_label = "-> offset";
  /// What a refusal leaves undone, in the message: "nothing was allocated or freed" (on any PE).
  const char *nothing_done = "nothing was allocated or freed";
  Status local_status = TSHMEM_SUCCESS;  ///< the PE's own verdict before agreeing (bad argument, exhausted)
  std::string local_error;               ///< its message when local_status != success
  /// The caller's own account of the call (tshmemx_note_next_collective), e.g. a binding's
  /// "tshmem.empty(shape=(4, 8), dtype=float32)": compared across PEs like the arguments, and named first in
  /// every message. Empty: none.
  std::string note;

  /// "tshmem_malloc(size=4096) -> offset 65536", after "<note>: " if any.
  std::string describe() const;
  /// What a refusal shows of this PE's call: describe(), then its local error if any (a binding's error that
  /// already begins with its note stands alone).
  std::string report() const;
};

/// Records the calling thread's note for its next call that reaches CollectiveCheck::agree (see
/// tshmemx_note_next_collective); an empty `error` is no error. Replaces a note not yet taken.
void note_next_collective(std::string description, std::string error);
/// Drops the calling thread's pending note, if any (a call that failed before its check).
void drop_collective_note();
/// `request` with the calling thread's pending note joined (its error, if any, as the local verdict), and the note
/// taken: for a checked call that completes without CollectiveCheck::agree.
CollectiveRequest take_collective_note(const CollectiveRequest &request);

struct PeReport;  // bootstrap/agree.h

/// The PEs of a checked call that only some PEs make (a host-blocking collective on a team smaller than the job):
/// how they agree and gather, and the job's PE number of each member for messages. Their calls form a sequence of
/// their own.
class CheckGroup {
 public:
  virtual ~CheckGroup() = default;
  virtual int size() const = 0;
  virtual int pe(int index) const = 0;
  /// Element-wise minimum over the members (at most 6 words).
  virtual Status allreduce_min(const int64_t *in, int64_t *out, int count) = 0;
  /// Every member's report, by member index (failure path only).
  virtual Status gather(const PeReport &mine, std::vector<PeReport> *all) = 0;
  /// The number of this checked call in the group's sequence (1, 2, ...).
  virtual uint64_t next_sequence() = 0;
};

class CollectiveCheck {
 public:
  explicit CollectiveCheck(Bootstrap &boot);
  ~CollectiveCheck();

  /// Collective. Returns success when every PE made the same request (the same call, arguments, note and, where
  /// it is an argument, offset, as the same checked call of this PE's sequence), got the same offset and
  /// succeeded locally. Otherwise returns, on every PE, the same status and message:
  ///   TSHMEM_ERR_ASYMMETRIC when requests or offsets differ (the divergent PEs named, each request listed),
  ///   else the local status of the lowest failing PE (e.g. TSHMEM_ERR_OUT_OF_MEMORY), with each failing PE's
  ///   message.
  /// A note the calling thread left (note_next_collective) joins this request and is taken. One checked call
  /// at a time per PE (TSHMEM_THREAD_MULTIPLE): the call counter and the allreduce are under a lock.
  Status agree(const CollectiveRequest &request);
  /// agree() over `group`'s members only (the calling thread's note joins as in agree()); messages name the
  /// members by their PE numbers.
  Status agree_in(CheckGroup &group, const CollectiveRequest &request);
  /// agree(), then (only when it succeeded) an element-wise minimum of `in` over every PE into `out`, under the
  /// same lock, so no other checked call of this PE's threads comes between them.
  Status agree_then_min(const CollectiveRequest &request, const int64_t *in, int64_t *out, int count);

  static constexpr bool enabled() { return TSHMEM_SYMMETRY_CHECK != 0; }
  /// The bootstrap it agrees over (for the collective work a checked call does once agreed, as backing the heap).
  Bootstrap &bootstrap() const { return boot_; }
  /// The bounds of its waits (the bootstrap's).
  const WaitBounds &bounds() const { return boot_.bounds(); }
  /// Checked calls this PE made over the whole job (the same on every PE after each of them).
  uint64_t sequence() const { return sequence_; }

 private:
  Status agree_locked(CheckGroup &group, const CollectiveRequest &request);
  static Status agree_request(CheckGroup &group, const CollectiveRequest &mine);
  static Status explain_failure(CheckGroup &group, const CollectiveRequest &mine, int64_t digest, uint64_t sequence);

  std::mutex mutex_;  // one checked call at a time per PE
  Bootstrap &boot_;
  uint64_t sequence_ = 0;            // the job's checked calls; part of every comparison
  std::unique_ptr<CheckGroup> job_;  // every PE, through the bootstrap, counting in sequence_
};

}  // namespace tshmemi
