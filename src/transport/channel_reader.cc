// The consuming side of the proxy channels (channel_reader.h).
#include "transport/channel_reader.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace tshmemi {
namespace {

// A channel counter or result tag: never moved once the path has stopped (the stopped value is final).
void store_unless_stopped(uint64_t *word, uint64_t value) {
  uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (seen != TSHMEMI_PROXY_STOPPED &&
         !__atomic_compare_exchange_n(word, &seen, value, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
  }
}

}  // namespace

ChannelReader::~ChannelReader() {
  if (rings_[kDevice] != nullptr && rings_[kDevice]->staging != nullptr) memory_.free_staging(rings_[kDevice]->staging);
  for (tshmemi_proxy_channel *ring : rings_)
    if (ring != nullptr) memory_.free_staging(ring);
}

// 64 payloads of the largest size in flight: a kernel that stages puts back to back keeps the proxy busy while
// earlier ones are sent, and small puts (16 bytes reserved each) are bounded by the channel's ring first.
uint64_t ChannelReader::stage_ring_bytes(uint64_t stage_max) {
  return stage_max == 0 ? 0 : 64 * TSHMEMI_PROXY_STAGE_RESERVED(stage_max);
}

uint64_t ChannelReader::staging_bytes(uint32_t entries, uint64_t stage_max) {
  return 2 * uint64_t{TSHMEMI_PROXY_CHANNEL_BYTES(entries)} + stage_ring_bytes(stage_max);
}

Status ChannelReader::create(uint32_t entries, uint64_t stage_max, int my_pe) {
  for (tshmemi_proxy_channel *&ring : rings_) {
    const size_t bytes = TSHMEMI_PROXY_CHANNEL_BYTES(entries);
    TSHMEM_CHECK(memory_.alloc_staging(bytes, reinterpret_cast<void **>(&ring)));
    std::memset(static_cast<void *>(ring), 0, bytes);
    ring->layout = TSHMEMI_PROXY_LAYOUT;
    ring->capacity = entries;
    ring->head_ptr = &ring->head;
  }
  tshmemi_proxy_channel *device = rings_[kDevice];
  if (stage_max > 0) {
    device->stage_bytes = stage_ring_bytes(stage_max);
    device->stage_max = stage_max;
    TSHMEM_CHECK(memory_.alloc_staging(device->stage_bytes, reinterpret_cast<void **>(&device->staging)));
  }
  // Kernels count tickets in device memory (a GPU's atomics on host memory are not atomic with the CPU's), and
  // read the counters they wait on there (proxy_types.h, tshmemi_proxy_device_side).
  TSHMEM_CHECK(memory_.alloc_device_side(rings_[kDevice], my_pe, &device_side_));
  if (device_side_ != nullptr) rings_[kDevice]->head_ptr = &device_side_->head;
  return TSHMEM_SUCCESS;
}

bool ChannelReader::visible(int ring) const {
  tshmemi_proxy_channel *channel = rings_[ring];
  const uint64_t ticket = next_[ring];
  const tshmemi_proxy_request *slot = tshmemi_proxy_slots(channel) + (ticket & (channel->capacity - 1));
  return __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == ticket + 1;
}

const void *ChannelReader::staged(const tshmemi_proxy_request &r, uint64_t offset, uint64_t *bytes) const {
  const tshmemi_proxy_channel *device = rings_[kDevice];
  const uint64_t at = (r.local + offset) % device->stage_bytes;
  *bytes = std::min(*bytes, device->stage_bytes - at);
  return device->staging + at;
}

bool ChannelReader::take(Taken *out) {
  const bool device = visible(kDevice), host = visible(kHost);
  if (!device && !host) return false;
  int ring = device && host ? (last_ring_ == kDevice ? kHost : kDevice) : (device ? kDevice : kHost);
  tshmemi_proxy_channel *channel = rings_[ring];
  tshmemi_proxy_request *slot = tshmemi_proxy_slots(channel) + (next_[ring] & (channel->capacity - 1));
  if (ring == kHost && device && slot->op == TSHMEMI_PROXY_QUIET) {
    ring = kDevice;
    channel = rings_[ring];
    slot = tshmemi_proxy_slots(channel) + (next_[ring] & (channel->capacity - 1));
  }
  last_ring_ = ring;
  out->ring = ring;
  out->ticket = next_[ring]++;
  out->request = *slot;
  return true;
}

void ChannelReader::finish(const Taken &taken, uint64_t point, bool result_slot) {
  Pending p{taken.ticket, point, result_slot};
  // A staged reservation is freed with its ticket, even for a request refused (else stage_freed would stop there);
  // a size past the largest is a broken producer's and frees no more than the largest reservation.
  const uint64_t max = stage_max(taken.ring);
  if ((taken.request.flags & TSHMEMI_PROXY_FLAG_STAGED) && max > 0) {
    p.stage_pos = taken.request.local;
    p.stage_reserved = TSHMEMI_PROXY_STAGE_RESERVED(std::min<uint64_t>(taken.request.bytes, max));
  }
  pending_[taken.ring].push_back(p);
}

void ChannelReader::free_staged(uint64_t pos, uint64_t reserved) {
  if (pos < stage_freed_) return;  // a broken producer's position: nothing to free
  stage_free_[pos] = reserved;
  const uint64_t before = stage_freed_;
  for (auto it = stage_free_.begin(); it != stage_free_.end() && it->first == stage_freed_; it = stage_free_.erase(it))
    stage_freed_ += it->second;
  if (stage_freed_ != before) store_unless_stopped(&rings_[kDevice]->stage_freed, stage_freed_);
}

bool ChannelReader::result_taken(int ring, uint64_t ticket) const {
  tshmemi_proxy_channel *channel = rings_[ring];
  const tshmemi_proxy_result *slot =
      tshmemi_proxy_results(channel, channel->capacity) + (ticket & (channel->capacity - 1));
  return __atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) == TSHMEMI_PROXY_RESULT_TAKEN(ticket);
}

bool ChannelReader::release(uint64_t released) {
  bool freed = false;
  for (int ring : {kDevice, kHost}) {
    std::deque<Pending> &pending = pending_[ring];
    const auto freeable = [&](const Pending &p) {
      return p.point <= released && (!p.result_slot || result_taken(ring, p.ticket));
    };
    if (pending.empty() || !freeable(pending.front())) continue;
    uint64_t tail = 0;
    while (!pending.empty() && freeable(pending.front())) {
      tail = pending.front().ticket + 1;
      if (pending.front().stage_reserved > 0) free_staged(pending.front().stage_pos, pending.front().stage_reserved);
      pending.pop_front();
    }
    store_unless_stopped(&rings_[ring]->tail, tail);
    freed = true;
  }
  return freed;
}

void ChannelReader::complete(int ring, uint64_t ticket) { store_unless_stopped(&rings_[ring]->done, ticket + 1); }

void ChannelReader::staged_get_complete(int ring, uint64_t ticket) {
  tshmemi_proxy_channel *channel = rings_[ring];
  tshmemi_proxy_result *slot = tshmemi_proxy_results(channel, channel->capacity) + (ticket & (channel->capacity - 1));
  store_unless_stopped(&slot->tag, ticket + 1);
}

void ChannelReader::deliver(uint64_t value_at, uint64_t tag) {
  static_assert(offsetof(tshmemi_proxy_result, tag) - offsetof(tshmemi_proxy_result, value) == 8, "result slot");
  if (tag != 0) store_unless_stopped(reinterpret_cast<uint64_t *>(value_at + 8), tag);
}

void ChannelReader::stop(const std::string &message) {
  for (tshmemi_proxy_channel *ring : rings_) {
    if (ring == nullptr) continue;
    char *text = tshmemi_proxy_failure(ring, ring->capacity);
    const size_t n = std::min(message.size(), size_t{TSHMEMI_PROXY_FAILURE_BYTES - 1});
    std::memcpy(text, message.data(), n);
    text[n] = '\0';
    __atomic_thread_fence(__ATOMIC_RELEASE);  // the text before the values that make a waiter read it
    tshmemi_proxy_result *results = tshmemi_proxy_results(ring, ring->capacity);
    for (uint32_t i = 0; i < ring->capacity; ++i)
      __atomic_store_n(&results[i].tag, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
    __atomic_store_n(&ring->tail, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
    __atomic_store_n(&ring->done, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
    __atomic_store_n(&ring->stage_freed, TSHMEMI_PROXY_STOPPED, __ATOMIC_RELEASE);
  }
}

}  // namespace tshmemi
