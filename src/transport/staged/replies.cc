// The staged protocol's table of the replies this PE awaits, and the bounds on every wait for a peer.
#include "transport/staged/staged.h"

namespace tshmemi {
namespace staged {

std::string StagedTransport::overdue(std::chrono::milliseconds bound) {
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
        oldest->waiter.kernel ? "for a kernel, " : "", what, oldest->pe, static_cast<long long>(bound.count()), my_pe_);
  }
  // A send the target does not receive (MPI's rendezvous waits for its receive) holds its buffer: with every
  // buffer held, nothing more goes out before the credits are counted out.
  int oldest_send = -1;
  for (int b : in_flight_)
    if (oldest_send < 0 || send_since_[static_cast<size_t>(b)] < send_since_[static_cast<size_t>(oldest_send)])
      oldest_send = b;
  if (oldest_send >= 0 && now - send_since_[static_cast<size_t>(oldest_send)] > bound)
    return format(
        "PE %d has not handled PE %d's messages for %lld ms (TSHMEM_PROXY_TIMEOUT_MS: a send to it has not "
        "completed, and sends hold the buffers that the next messages need: the channels fill); the off-node path "
        "of PE %d is stopped",
        send_pe_[static_cast<size_t>(oldest_send)], my_pe_, static_cast<long long>(bound.count()), my_pe_);
  const int blocked = credit_blocked_pe_.load(std::memory_order_relaxed);
  if (blocked >= 0 && now - credit_blocked_since_ > bound)
    return format(
        "PE %d has not handled PE %d's messages for %lld ms (TSHMEM_PROXY_TIMEOUT_MS: no credits, so "
        "nothing more goes out: the channels fill); the off-node path of PE %d is stopped",
        blocked, my_pe_, static_cast<long long>(bound.count()), my_pe_);
  return std::string();
}

std::string StagedTransport::waiting_on() const {
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

uint64_t StagedTransport::peek_expected_id() const {
  return ((expected_serial_ + 1) * kProxyMaxPending) | static_cast<uint64_t>(free_expected_.back());
}

void StagedTransport::expect(int pe, uint32_t kind, uint64_t token, uint64_t bytes, const Waiter &waiter) {
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

const Expected *StagedTransport::match_reply(int source, const wire::Record &w) const {
  if (w.id == 0) return nullptr;
  const Expected &e = expected_[w.id & (kProxyMaxPending - 1)];
  if (e.id != w.id || e.pe != source || e.kind != w.kind) return nullptr;
  if (w.kind == wire::kGetReply && w.bytes != e.bytes && w.bytes != 0) return nullptr;
  if (w.kind == wire::kAmoReply && w.width != e.bytes) return nullptr;
  return &e;
}

void StagedTransport::release_expected(uint64_t id) {
  Expected &e = expected_[id & (kProxyMaxPending - 1)];
  if (e.id != id) return;
  awaiting_[static_cast<size_t>(e.pe)].fetch_sub(1, std::memory_order_relaxed);
  e = Expected();
  free_expected_.push_back(static_cast<int>(id & (kProxyMaxPending - 1)));
}

}  // namespace staged
}  // namespace tshmemi
