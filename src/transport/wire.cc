// The off-node path's formats and rules (wire.h).
#include "transport/wire.h"

#include "heap/reserved_rule.h"

#include <cstring>

namespace tshmemi {
namespace wire {
namespace {

bool within(uint64_t offset, uint64_t bytes, uint64_t heap) { return offset <= heap && bytes <= heap - offset; }

}  // namespace

// --- requests ---

const char *op_name(unsigned op) {
  switch (op) {
    case TSHMEMI_PROXY_PUT: return "PUT";
    case TSHMEMI_PROXY_GET: return "GET";
    case TSHMEMI_PROXY_PUT_SIGNAL: return "PUT_SIGNAL";
    case TSHMEMI_PROXY_SIGNAL: return "SIGNAL";
    case TSHMEMI_PROXY_AMO: return "AMO";
    case TSHMEMI_PROXY_FENCE: return "FENCE";
    case TSHMEMI_PROXY_QUIET: return "QUIET";
  }
  return "unknown";
}

// The target's rules, applied where a request is read: the heap's bounds and tshmem's reserved region (the same
// rule the target applies to a staged message, and the host to its own puts), so a transport that writes the
// target's memory directly (UCX's direct mode) keeps it too.
static const char *checked(const Record &r, uint64_t heap_bytes) {
  const char *rule = check_access(r, heap_bytes);
  return rule != nullptr ? rule : check_reserved(r, heap_bytes);
}

const char *check_request(const tshmemi_proxy_request &r, int n_pes, uint64_t heap_bytes, uint64_t stage_max) {
  if (r.op < TSHMEMI_PROXY_PUT || r.op > TSHMEMI_PROXY_QUIET) return "unknown op";
  if (r.flags & TSHMEMI_PROXY_FLAG_STAGED) {
    if (r.op != TSHMEMI_PROXY_PUT && r.op != TSHMEMI_PROXY_PUT_SIGNAL && r.op != TSHMEMI_PROXY_GET)
      return "staged payload on an op other than a put or get";
    if (stage_max == 0) return "staged payload on a channel without put staging";
    if (r.bytes > stage_max) return "staged payload larger than TSHMEM_PROXY_STAGE_MAX";
    if (r.flags & (TSHMEMI_PROXY_FLAG_INLINE | TSHMEMI_PROXY_FLAG_RESULT_SLOT))
      return "staged payload that is also inline or in a result slot";
  }
  if (r.op == TSHMEMI_PROXY_FENCE || r.op == TSHMEMI_PROXY_QUIET) return nullptr;
  if (r.pe < 0 || r.pe >= n_pes) return "PE out of range";
  const char *rule = nullptr;
  switch (r.op) {
    case TSHMEMI_PROXY_PUT_SIGNAL:
      if ((rule = checked(signal(r.signal, amo_kind::of_signal(r.amo), r.value), heap_bytes)) != nullptr) return rule;
      [[fallthrough]];
    case TSHMEMI_PROXY_PUT:
    case TSHMEMI_PROXY_GET:
      // The whole range: each piece of it then lies within the heap.
      if ((rule = checked(r.op == TSHMEMI_PROXY_GET ? get(r.remote, r.bytes, 0) : put(r.remote, r.bytes),
                          heap_bytes)) != nullptr)
        return rule;
      if ((r.flags & (TSHMEMI_PROXY_FLAG_INLINE | TSHMEMI_PROXY_FLAG_RESULT_SLOT)) && r.bytes > 8)
        return "inline or result-slot transfer of more than 8 bytes";
      if (r.bytes > 0 && r.local == 0 && !(r.flags & (TSHMEMI_PROXY_FLAG_INLINE | TSHMEMI_PROXY_FLAG_STAGED)))
        return "local address is NULL";
      return nullptr;
    case TSHMEMI_PROXY_SIGNAL: return checked(signal(r.remote, amo_kind::of_signal(r.amo), r.value), heap_bytes);
    case TSHMEMI_PROXY_AMO:
      if ((rule = checked(amo(r.remote, r.amo, r.width, r.value, r.compare, 0), heap_bytes)) != nullptr) return rule;
      if (amo_kind::fetches(r.amo) && r.local == 0) return "fetching atomic without a result address";
      return nullptr;
  }
  return "unknown op";
}

std::string request_refusal(int my_pe, uint64_t ticket, const char *rule, const tshmemi_proxy_request &r) {
  return format("off-node proxy of PE %d: request %llu refused: %s (op %u = %s, pe %d, remote %llu, bytes %llu)", my_pe,
                static_cast<unsigned long long>(ticket), rule, r.op, op_name(r.op), r.pe,
                static_cast<unsigned long long>(r.remote), static_cast<unsigned long long>(r.bytes));
}

Waiter waiter_of(const tshmemi_proxy_request &r, uint64_t ticket, bool kernel) {
  Waiter w;
  w.tag = (r.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT) ? ticket + 1 : 0;
  w.kernel = kernel;
  return w;
}

// Aggregates, in their fields' order (transport.h).
PutOp put_of(const tshmemi_proxy_request &r) {
  const bool immediate = (r.flags & TSHMEMI_PROXY_FLAG_INLINE) != 0;
  const void *src = immediate ? static_cast<const void *>(&r.value) : reinterpret_cast<const void *>(r.local);
  return PutOp{r.pe, r.remote, src, r.bytes, immediate};
}

GetOp get_of(const tshmemi_proxy_request &r, const Waiter &waiter) {
  return GetOp{r.pe, r.remote, r.local, r.bytes, waiter};
}

AmoOp amo_of(const tshmemi_proxy_request &r, const Waiter &waiter) {
  return AmoOp{r.pe, r.remote, r.amo, r.width, r.value, r.compare, r.local, waiter};
}

SignalOp signal_of(const tshmemi_proxy_request &r) {
  return SignalOp{r.pe, r.op == TSHMEMI_PROXY_SIGNAL ? r.remote : r.signal, amo_kind::of_signal(r.amo), r.value};
}

// --- records ---

namespace {
Record record(Kind kind, uint64_t offset, uint64_t bytes, uint64_t id) {
  Record r;
  r.kind = kind;
  r.offset = offset;
  r.bytes = bytes;
  r.id = id;
  return r;
}
}  // namespace

Record put(uint64_t offset, uint64_t bytes) { return record(kPut, offset, bytes, 0); }
Record get(uint64_t offset, uint64_t bytes, uint64_t id) { return record(kGet, offset, bytes, id); }
Record flush(uint64_t id) { return record(kFlush, 0, 0, id); }
Record get_reply(uint64_t id, uint64_t offset, uint64_t bytes) { return record(kGetReply, offset, bytes, id); }
Record flush_ack(uint64_t id) { return record(kFlushAck, 0, 0, id); }
Record gone() { return record(kGone, 0, 0, 0); }

Record signal(uint64_t offset, unsigned kind, uint64_t value) {
  Record r = record(kSignal, offset, 0, 0);
  r.amo = static_cast<uint8_t>(kind);
  r.value = value;
  return r;
}

Record amo(uint64_t offset, unsigned kind, unsigned width, uint64_t value, uint64_t compare, uint64_t id) {
  Record r = record(kAmo, offset, 0, id);
  r.amo = static_cast<uint8_t>(kind);
  r.width = static_cast<uint8_t>(width);
  r.value = value;
  r.compare = compare;
  return r;
}

Record amo_reply(uint64_t id, unsigned width) {
  Record r = record(kAmoReply, 0, 0, id);
  r.width = static_cast<uint8_t>(width);
  return r;
}

Record credit(uint64_t messages) {
  Record r = record(kCredit, 0, 0, 0);
  r.value = messages;
  return r;
}

char *write(char *at, const Record &r) {
  std::memcpy(at, &r, kHeader);
  return at + kHeader;
}

bool is_control(const char *message, size_t bytes, Record *out) {
  if (bytes != kHeader) return false;
  std::memcpy(out, message, kHeader);
  return out->kind == kCredit || out->kind == kGone;
}

bool Reader::next(Record *record, const char **at, const char **rule) {
  *rule = nullptr;
  *record = Record();
  if (offset_ >= bytes_) return false;
  if (bytes_ - offset_ < kHeader) {
    *rule = "record shorter than a header";
    offset_ = bytes_;
    return false;
  }
  *at = message_ + offset_;
  std::memcpy(record, *at, kHeader);
  const uint64_t payload = carries_payload(record->kind) ? record->bytes : 0;
  if (payload > bytes_ - offset_ - kHeader) {
    *rule = "record longer than its message";
    offset_ = bytes_;
    return false;
  }
  offset_ += std::min<size_t>(bytes_ - offset_, record_bytes(payload));
  return true;
}

const char *check_access(const Record &r, uint64_t heap_bytes) {
  switch (r.kind) {
    case kPut:
    case kGet:
      // A put of no bytes touches nothing: a put with signal without data may name any address (NULL too).
      if ((r.kind == kGet || r.bytes != 0) && !within(r.offset, r.bytes, heap_bytes))
        return "remote range outside the symmetric heap";
      return nullptr;
    case kSignal:
      if (!within(r.offset, 8, heap_bytes) || r.offset % 8 != 0)
        return "signal word outside the heap or not 8-byte aligned";
      if (!amo_kind::is_signal(r.amo)) return "unknown signal op";
      return nullptr;
    case kAmo:
      if (r.width != 4 && r.width != 8) return "atomic width is not 4 or 8";
      if (!amo_kind::known(r.amo)) return "unknown atomic kind";
      if (!within(r.offset, r.width, heap_bytes) || r.offset % r.width != 0)
        return "atomic word outside the heap or not aligned to its width";
      return nullptr;
  }
  return nullptr;
}

const char *check_reserved(const Record &r, uint64_t heap_bytes) {
  switch (r.kind) {
    case kPut: return r.bytes != 0 ? remote_write_rule(r.offset, r.bytes, false, heap_bytes) : nullptr;
    case kSignal: return remote_write_rule(r.offset, 8, r.amo == TSHMEMI_AMO_SET, heap_bytes);
    case kAmo: return remote_write_rule(r.offset, r.width, false, heap_bytes);
  }
  return nullptr;
}

std::string record_refusal(int my_pe, int source, const char *rule, const Record &r) {
  return format("off-node proxy of PE %d: message from PE %d refused: %s (kind %u, offset %llu, bytes %llu)", my_pe,
                source, rule, r.kind, static_cast<unsigned long long>(r.offset),
                static_cast<unsigned long long>(r.bytes));
}

}  // namespace wire
}  // namespace tshmemi
