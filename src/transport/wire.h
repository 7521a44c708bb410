// The off-node path's formats and rules, free of MPI and threads (unit-tested by test/unit/wire_test.cc):
// - requests (proxy_types.h, what kernels and host calls post): the rules a request must pass, and the transport
//   operations each op becomes;
// - records: what proxies send each other, a 48-byte header and, for puts and get replies, payload; a message is
//   a sequence of records;
// - batching: which records share a message;
// - the refusal texts.
//
// Validation happens once, at the origin, before anything is sent (check_request): the refusal reaches the PE that
// posted the request, naming the ticket and the rule; a refused get or fetch costs no message and no reply entry,
// and its ticket is freed at once; and the origin knows everything the target would check (the heap size is
// agreed at init). A target does not validate requests again. What it keeps is the guard every receiver of
// foreign bytes needs, whatever its peers run: a record lies within its message (Reader) and the access it names
// lies within this heap, aligned and of a known kind (check_access, the same rules the origin applied), so no
// message makes the target touch memory outside its heap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/amo_kind.h"
#include "transport/transport.h"
#include "tshmem/device/proxy_types.h"

namespace tshmemi {
namespace wire {

// --- requests ---

/// The name of a request op, for messages ("unknown" for anything else).
const char *op_name(unsigned op);

/// The rule `r` breaks (nullptr: it may go), given the job's PEs and the heap's bytes. Rules, in order: the op is
/// known; FENCE and QUIET need nothing more; the PE is in range; the heap accesses pass check_access; an inline or
/// result-slot transfer is at most 8 bytes; a staged payload (TSHMEMI_PROXY_FLAG_STAGED) belongs to a put or get on
/// a channel with put staging (`stage_max` > 0, its largest payload) and is at most `stage_max` bytes; a transfer's
/// local address is not NULL unless inline or staged; a fetching atomic has a result address.
const char *check_request(const tshmemi_proxy_request &r, int n_pes, uint64_t heap_bytes, uint64_t stage_max = 0);

/// The message of a refused request: "off-node proxy of PE 0: request 5 refused: <rule> (op ..., pe ..., ...)".
std::string request_refusal(int my_pe, uint64_t ticket, const char *rule, const tshmemi_proxy_request &r);

/// Who waits for the reply of request `ticket`: its result slot when it has one, and whether a kernel posted it.
Waiter waiter_of(const tshmemi_proxy_request &r, uint64_t ticket, bool kernel);

/// The operations a checked request becomes. PUT: put; GET: get; PUT_SIGNAL: put, then signal; SIGNAL: signal;
/// AMO: amo; FENCE: fence; QUIET: quiet. An inline put's source is `r.value`: `r` must outlive the operation.
PutOp put_of(const tshmemi_proxy_request &r);
GetOp get_of(const tshmemi_proxy_request &r, const Waiter &waiter);
AmoOp amo_of(const tshmemi_proxy_request &r, const Waiter &waiter);
SignalOp signal_of(const tshmemi_proxy_request &r);

// --- records ---

enum Kind : uint32_t {
  kPut = 1,
  kSignal,
  kAmo,
  kGet,
  kFlush,  ///< acknowledged once everything the sender sent before it is in the target's heap
  kGetReply,
  kAmoReply,
  kFlushAck,
  kCredit,  ///< control: `value` more messages may be sent to the PE this came from
  kGone,    ///< control: the sender's off-node path has stopped
};

/// The header of every record; payload bytes follow it for kPut and kGetReply.
struct Record {
  uint32_t kind = 0;
  uint8_t amo = 0;    ///< kSignal, kAmo: the atomic kind (amo_kind.h)
  uint8_t width = 0;  ///< kAmo, kAmoReply: operand bytes
  uint8_t pad[2] = {};
  uint64_t offset = 0;  ///< heap offset at the target
  uint64_t bytes = 0;   ///< payload bytes (kPut, kGetReply) or bytes asked for (kGet)
  uint64_t value = 0, compare = 0;
  uint64_t id = 0;  ///< nonzero: the request wants a reply, which echoes it
};
static_assert(sizeof(Record) == 48, "wire header");
constexpr size_t kHeader = sizeof(Record);

/// Records with at most this much payload join batches; larger puts travel as messages of their own.
constexpr size_t kSmallPayload = 2048;
/// Most bytes of a batch: below the eager limits of MPI's transports (Open MPI: 4 KiB shared memory, 64 KiB tcp),
/// so that a batch is one eager message.
constexpr size_t kBatchBytes = 4032;

inline size_t padded(size_t bytes) { return (bytes + 7) & ~size_t{7}; }
inline bool carries_payload(uint32_t kind) { return kind == kPut || kind == kGetReply; }
/// Bytes of a record with `payload` bytes of payload.
inline size_t record_bytes(uint64_t payload) { return kHeader + padded(payload); }
/// Bytes of one message buffer: a header and a chunk (the largest message any PE sends).
inline size_t message_capacity(uint64_t chunk) { return record_bytes(chunk); }
/// The piece of a transfer of `total` bytes that starts at `done`: at most a chunk.
inline uint64_t piece(uint64_t total, uint64_t done, uint64_t chunk) { return std::min(chunk, total - done); }

Record put(uint64_t offset, uint64_t bytes);
Record signal(uint64_t offset, unsigned kind, uint64_t value);
Record amo(uint64_t offset, unsigned kind, unsigned width, uint64_t value, uint64_t compare, uint64_t id);
Record get(uint64_t offset, uint64_t bytes, uint64_t id);
Record flush(uint64_t id);
Record get_reply(uint64_t id, uint64_t offset, uint64_t bytes);
Record amo_reply(uint64_t id, unsigned width);
Record flush_ack(uint64_t id);
Record credit(uint64_t messages);
Record gone();

/// Writes `r` at `at` (a message buffer); returns where its payload goes.
char *write(char *at, const Record &r);
/// The address of the value field of the record at `record` (a message buffer): a signal's or a fetched value's
/// bytes, copied from there.
inline const char *value_at(const char *record) { return record + offsetof(Record, value); }

/// A control message (credits, a stop notice): one record alone, which costs its sender no credit.
bool is_control(const char *message, size_t bytes, Record *out);

/// The records of one message, in order.
class Reader {
 public:
  Reader(const char *message, size_t bytes) : message_(message), bytes_(bytes) {}
  /// The next record and where it starts in the message (its payload follows the header): true; false at the end,
  /// or at a record that does not fit its message (then *rule names it, *record is what was read of it, and
  /// the rest of the message is skipped).
  bool next(Record *record, const char **at, const char **rule);

 private:
  const char *message_;
  size_t bytes_, offset_ = 0;
};

/// The rule a record's heap access breaks in a heap of `heap_bytes` (nullptr: it may be applied). kPut, kGet: the
/// range lies within the heap; kSignal: an 8-byte aligned word within the heap, SET or ADD; kAmo: width 4 or 8, a
/// known kind, a word within the heap aligned to its width. Other kinds touch no heap memory.
const char *check_access(const Record &r, uint64_t heap_bytes);

/// The rule a record's write into tshmem's reserved heap regions breaks (heap/reserved_rule.h, the rule host calls
/// follow too), or nullptr; reads and records that touch no heap pass. Applied by the target to everything another
/// node sends, so a kernel's request (which the origin cannot tell from tshmem's own) is held to it as well.
const char *check_reserved(const Record &r, uint64_t heap_bytes);

/// The message of a refused record: "off-node proxy of PE 1: message from PE 0 refused: <rule> (kind ...)".
std::string record_refusal(int my_pe, int source, const char *rule, const Record &r);

// --- batching ---

/// A message being assembled: records to one PE. A record whose payload is small (at most kSmallPayload) joins the
/// open batch to its PE while the batch stays within `limit`; anything else starts a message, and a large record
/// (a chunk of a put, a get reply's data) is a message of its own.
struct Message {
  int pe = -1;
  size_t bytes = 0;
  bool open = true;    ///< still being assembled
  bool batch = false;  ///< small records may join it while open

  static bool small(uint64_t payload) { return payload <= kSmallPayload; }
  /// The most bytes of a batch in buffers of `capacity` bytes.
  static size_t batch_limit(size_t capacity) { return std::min(capacity, kBatchBytes); }
  /// Adds a record of `record_bytes` to `pe` when it may join: true, and it goes at offset bytes - record_bytes.
  bool join(int to, size_t record_bytes, bool small_record, size_t limit) {
    if (!small_record || !open || !batch || pe != to || bytes + record_bytes > limit) return false;
    bytes += record_bytes;
    return true;
  }
};

}  // namespace wire
}  // namespace tshmemi
