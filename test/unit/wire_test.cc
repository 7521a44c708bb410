// The off-node path's formats and rules without MPI (transport/wire.h, transport/amo_kind.h): every request rule and
// its refusal text, what each request op becomes, every record kind through a message and back, the target's guard,
// the batching bounds and every atomic kind's result.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "transport/amo_kind.h"
#include "transport/wire.h"

namespace tshmemi {
namespace {

constexpr uint64_t kHeap = 1 << 20;
constexpr int kPes = 4;

tshmemi_proxy_request request(unsigned op, int pe = 1, uint64_t remote = 64, uint64_t bytes = 8,
                              uint64_t local = 4096) {
  tshmemi_proxy_request r = {};
  r.op = static_cast<uint8_t>(op);
  r.pe = pe;
  r.remote = remote;
  r.bytes = bytes;
  r.local = local;
  return r;
}

tshmemi_proxy_request amo_request(unsigned kind, unsigned width, uint64_t remote = 64, uint64_t local = 4096) {
  tshmemi_proxy_request r = request(TSHMEMI_PROXY_AMO, 1, remote, 0, local);
  r.amo = static_cast<uint8_t>(kind);
  r.width = static_cast<uint8_t>(width);
  return r;
}

tshmemi_proxy_request signal_request(unsigned op, unsigned signal_op, uint64_t word) {
  tshmemi_proxy_request r = request(op);
  r.amo = static_cast<uint8_t>(signal_op);
  if (op == TSHMEMI_PROXY_SIGNAL)
    r.remote = word;
  else
    r.signal = word;
  r.value = 5;
  return r;
}

std::string rule_of(const tshmemi_proxy_request &r) {
  const char *rule = wire::check_request(r, kPes, kHeap);
  return rule != nullptr ? rule : "";
}

// --- requests: the rules, in order, with their texts ---

TEST(WireRequest, UnknownOpsAreRefused) {
  for (unsigned op : {0u, 8u, 99u, 255u}) EXPECT_EQ(rule_of(request(op)), "unknown op") << op;
  EXPECT_STREQ(wire::op_name(99), "unknown");
  EXPECT_STREQ(wire::op_name(TSHMEMI_PROXY_PUT_SIGNAL), "PUT_SIGNAL");
}

TEST(WireRequest, FenceAndQuietNeedNothingMore) {
  for (unsigned op : {TSHMEMI_PROXY_FENCE, TSHMEMI_PROXY_QUIET}) {
    tshmemi_proxy_request r = request(op, -7, ~uint64_t{0}, ~uint64_t{0}, 0);
    EXPECT_EQ(rule_of(r), "") << wire::op_name(op);
  }
}

TEST(WireRequest, ThePeMustBeInRange) {
  for (unsigned op = TSHMEMI_PROXY_PUT; op <= TSHMEMI_PROXY_AMO; ++op) {
    EXPECT_EQ(rule_of(request(op, -1)), "PE out of range") << wire::op_name(op);
    EXPECT_EQ(rule_of(request(op, kPes)), "PE out of range") << wire::op_name(op);
  }
  EXPECT_EQ(rule_of(request(TSHMEMI_PROXY_PUT, kPes - 1)), "");
  EXPECT_EQ(rule_of(request(TSHMEMI_PROXY_PUT, 0)), "");
}

TEST(WireRequest, TransfersStayInsideTheHeap) {
  for (unsigned op : {TSHMEMI_PROXY_PUT, TSHMEMI_PROXY_GET, TSHMEMI_PROXY_PUT_SIGNAL}) {
    tshmemi_proxy_request r =
        op == TSHMEMI_PROXY_PUT_SIGNAL ? signal_request(op, TSHMEMI_PROXY_SIGNAL_ADD, 0) : request(op);
    r.remote = kHeap - 8;
    r.bytes = 8;
    EXPECT_EQ(rule_of(r), "") << "the last 8 bytes";
    r.bytes = 9;
    EXPECT_EQ(rule_of(r), "remote range outside the symmetric heap");
    r.remote = ~uint64_t{0} - 2;  // offset + bytes would wrap
    r.bytes = 8;
    EXPECT_EQ(rule_of(r), "remote range outside the symmetric heap");
    r.remote = kHeap;
    r.bytes = 0;
    EXPECT_EQ(rule_of(r), "") << "an empty transfer at the end";
    // A put of no bytes touches nothing: a put with signal without data may name any address (an empty torch
    // tensor's is NULL, far below the heap), the reserved region too; a get's range stays checked.
    for (uint64_t remote : {~uint64_t{0} - 4095, kHeap + 1, uint64_t{0}}) {
      r.remote = remote;
      EXPECT_EQ(rule_of(r), op == TSHMEMI_PROXY_GET && remote != 0 ? "remote range outside the symmetric heap" : "")
          << wire::op_name(op) << " of no bytes at offset " << remote;
    }
  }
}

TEST(WireRequest, InlineAndResultSlotTransfersCarryAtMostEightBytes) {
  tshmemi_proxy_request put = request(TSHMEMI_PROXY_PUT, 1, 64, 8, 0);
  put.flags = TSHMEMI_PROXY_FLAG_INLINE;
  EXPECT_EQ(rule_of(put), "") << "an inline put has no local address";
  put.bytes = 9;
  EXPECT_EQ(rule_of(put), "inline or result-slot transfer of more than 8 bytes");
  tshmemi_proxy_request g = request(TSHMEMI_PROXY_GET, 1, 64, 16);
  g.flags = TSHMEMI_PROXY_FLAG_RESULT_SLOT;
  EXPECT_EQ(rule_of(g), "inline or result-slot transfer of more than 8 bytes");
}

TEST(WireRequest, StagedPayloadsArePutsOfAtMostTheLargestStagedSize) {
  const auto staged_rule = [](const tshmemi_proxy_request &r, uint64_t stage_max) {
    const char *rule = wire::check_request(r, kPes, kHeap, stage_max);
    return std::string(rule != nullptr ? rule : "");
  };
  tshmemi_proxy_request put = request(TSHMEMI_PROXY_PUT, 1, 64, 1024, 0);
  put.flags = TSHMEMI_PROXY_FLAG_STAGED;
  EXPECT_EQ(staged_rule(put, 1024), "") << "a staged put's local is its staging position, 0 included";
  EXPECT_EQ(staged_rule(put, 0), "staged payload on a channel without put staging");
  put.bytes = 1025;
  EXPECT_EQ(staged_rule(put, 1024), "staged payload larger than TSHMEM_PROXY_STAGE_MAX");
  put.bytes = 8;
  put.flags |= TSHMEMI_PROXY_FLAG_INLINE;
  EXPECT_EQ(staged_rule(put, 1024), "staged payload that is also inline or in a result slot");
  tshmemi_proxy_request with_signal = signal_request(TSHMEMI_PROXY_PUT_SIGNAL, TSHMEMI_PROXY_SIGNAL_SET, 0);
  with_signal.flags = TSHMEMI_PROXY_FLAG_STAGED;
  with_signal.bytes = 16;
  EXPECT_EQ(staged_rule(with_signal, 1024), "");
  tshmemi_proxy_request get = request(TSHMEMI_PROXY_GET, 1, 64, 1024, 0);
  get.flags = TSHMEMI_PROXY_FLAG_STAGED;
  EXPECT_EQ(staged_rule(get, 1024), "") << "a staged get's data lands in the staging";
  get.flags |= TSHMEMI_PROXY_FLAG_RESULT_SLOT;
  EXPECT_EQ(staged_rule(get, 1024), "staged payload that is also inline or in a result slot");
  for (unsigned op : {TSHMEMI_PROXY_SIGNAL, TSHMEMI_PROXY_AMO}) {
    tshmemi_proxy_request r = request(op);
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    EXPECT_EQ(staged_rule(r, 1024), "staged payload on an op other than a put or get") << wire::op_name(op);
  }
}

TEST(WireRequest, ATransferNeedsALocalAddress) {
  for (unsigned op : {TSHMEMI_PROXY_PUT, TSHMEMI_PROXY_GET}) {
    EXPECT_EQ(rule_of(request(op, 1, 64, 8, 0)), "local address is NULL") << wire::op_name(op);
    EXPECT_EQ(rule_of(request(op, 1, 64, 0, 0)), "") << "nothing to move";
  }
}

TEST(WireRequest, SignalsNameAnAlignedWordAndAKnownOp) {
  for (unsigned op : {TSHMEMI_PROXY_SIGNAL, TSHMEMI_PROXY_PUT_SIGNAL}) {
    const std::string name = wire::op_name(op);
    EXPECT_EQ(rule_of(signal_request(op, TSHMEMI_PROXY_SIGNAL_SET, 64)), "") << name;
    EXPECT_EQ(rule_of(signal_request(op, TSHMEMI_PROXY_SIGNAL_ADD, kHeap - 8)), "") << name;
    EXPECT_EQ(rule_of(signal_request(op, TSHMEMI_PROXY_SIGNAL_SET, 65)),
              "signal word outside the heap or not 8-byte aligned")
        << name;
    EXPECT_EQ(rule_of(signal_request(op, TSHMEMI_PROXY_SIGNAL_SET, kHeap - 4)),
              "signal word outside the heap or not 8-byte aligned")
        << name;
    EXPECT_EQ(rule_of(signal_request(op, 2, 64)), "unknown signal op") << name;
    // The word is checked before the op.
    EXPECT_EQ(rule_of(signal_request(op, 2, 65)), "signal word outside the heap or not 8-byte aligned") << name;
  }
}

TEST(WireRequest, AtomicsHaveAWidthAKindAnAlignedWordAndAResultAddress) {
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, 4)), "");
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, 8, 64, 0)), "") << "a non-fetching atomic returns nothing";
  for (unsigned width : {0u, 1u, 2u, 3u, 5u, 16u})
    EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, width)), "atomic width is not 4 or 8") << width;
  for (unsigned kind : {0u, 7u, 8u, 15u, 25u, 255u})
    EXPECT_EQ(rule_of(amo_request(kind, 8)), "unknown atomic kind") << kind;
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, 8, 68)), "atomic word outside the heap or not aligned to its width");
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, 4, 68)), "");
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_ADD, 8, kHeap)),
            "atomic word outside the heap or not aligned to its width");
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_FETCH_ADD, 8, 64, 0)), "fetching atomic without a result address");
  // In order: width, kind, word, result address.
  EXPECT_EQ(rule_of(amo_request(99, 3, 65, 0)), "atomic width is not 4 or 8");
  EXPECT_EQ(rule_of(amo_request(99, 8, 65, 0)), "unknown atomic kind");
  EXPECT_EQ(rule_of(amo_request(TSHMEMI_AMO_SWAP, 8, 65, 0)),
            "atomic word outside the heap or not aligned to its width");
}

TEST(WireRequest, ARefusalNamesThePeTheTicketTheRuleAndTheRequest) {
  tshmemi_proxy_request r = request(TSHMEMI_PROXY_GET, 9, 123, 45);
  EXPECT_EQ(wire::request_refusal(2, 17, "PE out of range", r),
            "off-node proxy of PE 2: request 17 refused: PE out of range (op 2 = GET, pe 9, remote 123, bytes 45)");
}

// --- what each request op becomes ---

TEST(WireRequest, EachOpBecomesItsOperations) {
  tshmemi_proxy_request r = request(TSHMEMI_PROXY_PUT, 3, 256, 100, 0x1000);
  PutOp put = wire::put_of(r);
  EXPECT_EQ(put.pe, 3);
  EXPECT_EQ(put.offset, 256u);
  EXPECT_EQ(put.bytes, 100u);
  EXPECT_EQ(put.src, reinterpret_cast<const void *>(0x1000));
  EXPECT_FALSE(put.immediate);
  r.flags = TSHMEMI_PROXY_FLAG_INLINE;
  r.value = 0x1122334455667788;
  put = wire::put_of(r);
  EXPECT_TRUE(put.immediate);
  EXPECT_EQ(put.src, static_cast<const void *>(&r.value)) << "an inline put's data is the request's value";

  r = request(TSHMEMI_PROXY_GET, 2, 512, 16, 0x2000);
  const Waiter waiter = wire::waiter_of(r, 41, true);
  EXPECT_EQ(waiter.tag, 0u) << "no result slot";
  EXPECT_TRUE(waiter.kernel);
  const GetOp get = wire::get_of(r, waiter);
  EXPECT_EQ(get.pe, 2);
  EXPECT_EQ(get.offset, 512u);
  EXPECT_EQ(get.dst, 0x2000u);
  EXPECT_EQ(get.bytes, 16u);
  r.flags = TSHMEMI_PROXY_FLAG_RESULT_SLOT;
  EXPECT_EQ(wire::waiter_of(r, 41, false).tag, 42u) << "a result slot waits for tag = ticket + 1";
  EXPECT_FALSE(wire::waiter_of(r, 41, false).kernel);

  r = amo_request(TSHMEMI_AMO_CSWAP, 4, 128, 0x3000);
  r.value = 7;
  r.compare = 6;
  const AmoOp amo = wire::amo_of(r, Waiter());
  EXPECT_EQ(amo.kind, unsigned{TSHMEMI_AMO_CSWAP});
  EXPECT_EQ(amo.width, 4u);
  EXPECT_EQ(amo.offset, 128u);
  EXPECT_EQ(amo.value, 7u);
  EXPECT_EQ(amo.compare, 6u);
  EXPECT_EQ(amo.dst, 0x3000u);

  // A signal is the atomic it is, on the word the op names.
  SignalOp signal = wire::signal_of(signal_request(TSHMEMI_PROXY_SIGNAL, TSHMEMI_PROXY_SIGNAL_SET, 800));
  EXPECT_EQ(signal.offset, 800u);
  EXPECT_EQ(signal.kind, unsigned{TSHMEMI_AMO_SET});
  EXPECT_EQ(signal.value, 5u);
  tshmemi_proxy_request put_signal = signal_request(TSHMEMI_PROXY_PUT_SIGNAL, TSHMEMI_PROXY_SIGNAL_ADD, 808);
  signal = wire::signal_of(put_signal);
  EXPECT_EQ(signal.offset, 808u) << "PUT_SIGNAL: the signal word, not the data's";
  EXPECT_EQ(signal.kind, unsigned{TSHMEMI_AMO_ADD});
  EXPECT_EQ(wire::put_of(put_signal).offset, put_signal.remote);
}

// --- atomic kinds ---

TEST(AmoKind, KnownKindsAreExactlyTheEnumeratedOnes) {
  const unsigned kinds[] = {TSHMEMI_AMO_SET,       TSHMEMI_AMO_ADD,       TSHMEMI_AMO_INC,       TSHMEMI_AMO_AND,
                            TSHMEMI_AMO_OR,        TSHMEMI_AMO_XOR,       TSHMEMI_AMO_FETCH,     TSHMEMI_AMO_FETCH | 1,
                            TSHMEMI_AMO_FETCH_ADD, TSHMEMI_AMO_FETCH_INC, TSHMEMI_AMO_FETCH_AND, TSHMEMI_AMO_FETCH_OR,
                            TSHMEMI_AMO_FETCH_XOR, TSHMEMI_AMO_SWAP,      TSHMEMI_AMO_CSWAP};
  for (unsigned kind = 0; kind < 256; ++kind) {
    bool listed = false;
    for (unsigned k : kinds) listed |= k == kind;
    EXPECT_EQ(amo_kind::known(kind), listed) << kind;
    if (listed) {
      EXPECT_EQ(amo_kind::fetches(kind), kind >= TSHMEMI_AMO_FETCH) << kind;
    }
  }
  EXPECT_EQ(amo_kind::of_signal(TSHMEMI_PROXY_SIGNAL_SET), unsigned{TSHMEMI_AMO_SET});
  EXPECT_EQ(amo_kind::of_signal(TSHMEMI_PROXY_SIGNAL_ADD), unsigned{TSHMEMI_AMO_ADD});
  EXPECT_EQ(amo_kind::of_signal(2), 0u);
  EXPECT_TRUE(amo_kind::is_signal(TSHMEMI_AMO_SET));
  EXPECT_TRUE(amo_kind::is_signal(TSHMEMI_AMO_ADD));
  EXPECT_FALSE(amo_kind::is_signal(TSHMEMI_AMO_FETCH_ADD));
  EXPECT_FALSE(amo_kind::is_signal(0));
}

template <class T>
void expect_results() {
  const T old = static_cast<T>(0xF0F0F0F0F0F0F0F0ull), value = static_cast<T>(0x0FF00FF00FF00FF0ull);
  const T max = static_cast<T>(~T(0));
  for (unsigned fetch : {0u, unsigned{TSHMEMI_AMO_FETCH}}) {
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_SET | fetch, old, value, 0), value);
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_ADD | fetch, max, T(2), 0), T(1)) << "wraps";
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_INC | fetch, max, value, 0), T(0)) << "wraps";
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_AND | fetch, old, value, 0), static_cast<T>(old & value));
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_OR | fetch, old, value, 0), static_cast<T>(old | value));
    EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_XOR | fetch, old, value, 0), static_cast<T>(old ^ value));
  }
  EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_FETCH, old, value, 0), old) << "FETCH reads only";
  EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_SWAP, old, value, 0), value);
  EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_CSWAP, old, value, old), value) << "equal: swapped";
  EXPECT_EQ(amo_kind::result<T>(TSHMEMI_AMO_CSWAP, old, value, T(old + 1)), old) << "different: kept";
  EXPECT_EQ(amo_kind::op(TSHMEMI_AMO_FETCH), amo_kind::kRead);
  EXPECT_EQ(amo_kind::op(TSHMEMI_AMO_SWAP), amo_kind::kSwap);
  EXPECT_EQ(amo_kind::op(TSHMEMI_AMO_CSWAP), amo_kind::kCswap);
}

TEST(AmoKind, EveryKindGivesItsResultAtBothWidths) {
  expect_results<uint32_t>();
  expect_results<uint64_t>();
}

// --- records through a message and back ---

std::vector<wire::Record> every_kind() {
  return {wire::put(100, 3),
          wire::signal(808, TSHMEMI_AMO_SET, 9),
          wire::signal(816, TSHMEMI_AMO_ADD, 10),
          wire::amo(64, TSHMEMI_AMO_CSWAP, 8, 11, 12, 0x4041),
          wire::amo(68, TSHMEMI_AMO_INC, 4, 0, 0, 0),
          wire::get(4096, 1 << 19, 0x4042),
          wire::flush(0x4043),
          wire::get_reply(0x4042, 4096, 5),
          wire::amo_reply(0x4041, 8),
          wire::flush_ack(0x4043),
          wire::credit(4),
          wire::gone()};
}

bool same(const wire::Record &a, const wire::Record &b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(WireRecord, EveryKindReadsBackAsWritten) {
  static_assert(wire::kHeader == 48, "the record header is 48 bytes");
  const std::vector<wire::Record> records = every_kind();
  EXPECT_EQ(records[0].kind, uint32_t{wire::kPut});
  EXPECT_EQ(records[1].amo, uint8_t{TSHMEMI_AMO_SET});
  EXPECT_EQ(records[3].width, 8);
  EXPECT_EQ(records[3].compare, 12u);
  EXPECT_EQ(records[5].bytes, uint64_t{1} << 19) << "a get asks for bytes; it carries none";
  EXPECT_EQ(records[10].value, 4u);
  // Into one message, with payload after the put (3 bytes, padded to 8) and the get reply (5 bytes).
  std::vector<char> message(4096, 0);
  size_t at = 0;
  for (const wire::Record &r : records) {
    char *payload = wire::write(message.data() + at, r);
    const uint64_t bytes = wire::carries_payload(r.kind) ? r.bytes : 0;
    for (uint64_t i = 0; i < bytes; ++i) payload[i] = static_cast<char>('a' + i);
    at += wire::record_bytes(bytes);
  }
  EXPECT_EQ(at, records.size() * wire::kHeader + 16);
  wire::Reader reader(message.data(), at);
  wire::Record read;
  const char *where = nullptr, *rule = nullptr;
  size_t n = 0;
  while (reader.next(&read, &where, &rule)) {
    ASSERT_LT(n, records.size());
    EXPECT_TRUE(same(read, records[n])) << "record " << n << ", kind " << read.kind;
    if (wire::carries_payload(read.kind)) {
      EXPECT_EQ(std::string(where + wire::kHeader, read.bytes), std::string("abcde").substr(0, read.bytes));
    }
    uint64_t value = 0;
    std::memcpy(&value, wire::value_at(where), sizeof value);
    EXPECT_EQ(value, records[n].value) << "value_at: where a signal's or fetched value's bytes are copied from";
    ++n;
  }
  EXPECT_EQ(rule, nullptr);
  EXPECT_EQ(n, records.size());
}

TEST(WireRecord, ControlMessagesAreOneRecordAlone) {
  char message[2 * wire::kHeader] = {};
  wire::Record out;
  for (const wire::Record &r : every_kind()) {
    wire::write(message, r);
    const bool control = r.kind == wire::kCredit || r.kind == wire::kGone;
    EXPECT_EQ(wire::is_control(message, wire::kHeader, &out), control) << r.kind;
    if (control) {
      EXPECT_TRUE(same(out, r));
    }
    wire::write(message + wire::kHeader, wire::flush(1));
    EXPECT_FALSE(wire::is_control(message, 2 * wire::kHeader, &out)) << "two records are not a control message";
  }
}

TEST(WireRecord, RecordsThatDoNotFitTheirMessageAreRefused) {
  std::vector<char> message(256, 0);
  wire::Record read;
  const char *where = nullptr, *rule = nullptr;
  {
    wire::Reader reader(message.data(), wire::kHeader - 1);
    EXPECT_FALSE(reader.next(&read, &where, &rule));
    EXPECT_STREQ(rule, "record shorter than a header");
  }
  {
    wire::write(message.data(), wire::flush(1));
    wire::Reader reader(message.data(), wire::kHeader + 20);  // a whole record, then 20 bytes
    EXPECT_TRUE(reader.next(&read, &where, &rule));
    EXPECT_FALSE(reader.next(&read, &where, &rule));
    EXPECT_STREQ(rule, "record shorter than a header");
    EXPECT_FALSE(reader.next(&read, &where, &rule)) << "the rest of the message is skipped";
  }
  for (uint64_t claimed : {uint64_t{200}, uint64_t{1} << 40, ~uint64_t{0}}) {
    wire::write(message.data(), wire::put(0, claimed));
    wire::Reader reader(message.data(), wire::kHeader + 64);
    EXPECT_FALSE(reader.next(&read, &where, &rule)) << claimed;
    EXPECT_STREQ(rule, "record longer than its message");
    EXPECT_EQ(read.bytes, claimed) << "what was read of it, for the refusal's text";
  }
  {
    wire::write(message.data(), wire::get(0, uint64_t{1} << 40, 1));  // bytes asked for, none carried
    wire::Reader reader(message.data(), wire::kHeader);
    EXPECT_TRUE(reader.next(&read, &where, &rule));
    EXPECT_EQ(rule, nullptr);
  }
}

// --- the target's guard: the same rules, on what arrives ---

TEST(WireRecord, TheTargetGuardsItsHeapWithTheOriginsRules) {
  const auto rule = [](const wire::Record &r) {
    const char *broken = wire::check_access(r, kHeap);
    return std::string(broken != nullptr ? broken : "");
  };
  for (const wire::Record &r : every_kind()) EXPECT_EQ(rule(r), "") << r.kind;
  EXPECT_EQ(rule(wire::put(kHeap - 8, 9)), "remote range outside the symmetric heap");
  EXPECT_EQ(rule(wire::get(kHeap + 8, 0, 1)), "remote range outside the symmetric heap");
  EXPECT_EQ(rule(wire::signal(kHeap, TSHMEMI_AMO_SET, 1)), "signal word outside the heap or not 8-byte aligned");
  EXPECT_EQ(rule(wire::signal(4, TSHMEMI_AMO_ADD, 1)), "signal word outside the heap or not 8-byte aligned");
  EXPECT_EQ(rule(wire::signal(8, TSHMEMI_AMO_FETCH_ADD, 1)), "unknown signal op");
  EXPECT_EQ(rule(wire::amo(8, TSHMEMI_AMO_ADD, 2, 1, 0, 0)), "atomic width is not 4 or 8");
  EXPECT_EQ(rule(wire::amo(8, 9, 8, 1, 0, 0)), "unknown atomic kind");
  EXPECT_EQ(rule(wire::amo(12, TSHMEMI_AMO_ADD, 8, 1, 0, 0)),
            "atomic word outside the heap or not aligned to its width");
  EXPECT_EQ(wire::record_refusal(1, 0, "unknown message kind", wire::put(16, 32)),
            "off-node proxy of PE 1: message from PE 0 refused: unknown message kind (kind 1, offset 16, bytes 32)");
}

// --- batching ---

TEST(WireBatch, SmallRecordsShareAMessageUpToTheBatchLimit) {
  EXPECT_TRUE(wire::Message::small(wire::kSmallPayload));
  EXPECT_FALSE(wire::Message::small(wire::kSmallPayload + 1));
  EXPECT_LT(wire::kBatchBytes, 4096u) << "under Open MPI's 4 KiB shared-memory eager limit";
  const size_t capacity = wire::message_capacity(512 * 1024);
  EXPECT_EQ(capacity, wire::kHeader + 512 * 1024);
  const size_t limit = wire::Message::batch_limit(capacity);
  EXPECT_EQ(limit, wire::kBatchBytes);
  wire::Message m;
  m.pe = 2;
  m.batch = true;
  m.bytes = wire::kHeader;
  int joined = 1;
  while (m.join(2, wire::kHeader, true, limit)) ++joined;
  EXPECT_EQ(joined, static_cast<int>(wire::kBatchBytes / wire::kHeader)) << "84 records of 48 bytes: 4032";
  EXPECT_EQ(m.bytes, wire::kBatchBytes);
  EXPECT_EQ(wire::kBatchBytes / wire::record_bytes(8), 72u) << "a kernel's p (8 bytes inline): 72 to a message";

  wire::Message fresh;
  fresh.pe = 2;
  fresh.batch = true;
  fresh.bytes = wire::kHeader;
  EXPECT_FALSE(fresh.join(3, wire::kHeader, true, limit)) << "another PE";
  EXPECT_FALSE(fresh.join(2, wire::kHeader, false, limit)) << "a large record";
  const size_t largest_small = wire::record_bytes(wire::kSmallPayload);
  EXPECT_TRUE(fresh.join(2, largest_small, true, limit)) << "a put of 2 KiB joins";
  EXPECT_FALSE(fresh.join(2, largest_small, true, limit)) << "a second one would pass the limit";
  fresh.open = false;
  EXPECT_FALSE(fresh.join(2, wire::kHeader, true, limit)) << "sealed";
  wire::Message chunk;  // a message of its own
  chunk.pe = 2;
  chunk.bytes = wire::record_bytes(4096);
  EXPECT_FALSE(chunk.join(2, wire::kHeader, true, limit)) << "not a batch";
}

TEST(WireBatch, SmallBuffersBoundBatchesAndLargeTransfersGoInChunks) {
  // The smallest chunk (TSHMEM_PROXY_CHUNK=64): a batch is as large as a buffer.
  const size_t capacity = wire::message_capacity(64);
  EXPECT_EQ(wire::Message::batch_limit(capacity), capacity);
  wire::Message m;
  m.pe = 0;
  m.batch = true;
  m.bytes = wire::kHeader;
  EXPECT_TRUE(m.join(0, wire::kHeader, true, capacity));
  EXPECT_FALSE(m.join(0, wire::kHeader, true, capacity)) << "112 bytes hold two headers";
  // A transfer is cut into chunks; the last piece is what is left.
  const uint64_t chunk = 512 * 1024, total = 2 * chunk + 13;
  std::vector<uint64_t> pieces;
  for (uint64_t done = 0; done < total; done += pieces.back()) pieces.push_back(wire::piece(total, done, chunk));
  EXPECT_EQ(pieces, (std::vector<uint64_t>{chunk, chunk, 13}));
  EXPECT_EQ(wire::record_bytes(13), wire::kHeader + 16);
  EXPECT_EQ(wire::padded(0), 0u);
  EXPECT_EQ(wire::padded(1), 8u);
  EXPECT_EQ(wire::padded(8), 8u);
}

}  // namespace
}  // namespace tshmemi
