// The consuming side of this PE's two proxy channels (proxy_types.h): one for kernels (and the tests' CPU
// producers), one for host calls. It takes requests in ticket order, frees a ticket's slot (raises `tail`, the
// producers' room) once the transport has read its source and, for a result slot, once its reader has taken the
// value; stores a QUIET's `done` and a result slot's tag; and, when the off-node path stops, writes the failure
// text and TSHMEMI_PROXY_STOPPED into every counter and tag a producer may wait on. The device channel has a put
// staging ring (proxy_types.h): a staged put's payload is read from there, and its bytes are freed, in position
// order, when its ticket is.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "common/error.h"
#include "transport/proxy_memory.h"
#include "tshmem/device/proxy_types.h"

namespace tshmemi {

class ChannelReader {
 public:
  static constexpr int kDevice = 0, kHost = 1;

  /// A request taken from a channel.
  struct Taken {
    int ring = kDevice;
    uint64_t ticket = 0;
    tshmemi_proxy_request request = {};
  };

  explicit ChannelReader(ProxyMemory &memory) : memory_(memory) {}
  ~ChannelReader();
  ChannelReader(const ChannelReader &) = delete;
  ChannelReader &operator=(const ChannelReader &) = delete;

  /// Bytes of the device channel's put staging for puts of at most `stage_max` bytes (0: none): 64 of them.
  static uint64_t stage_ring_bytes(uint64_t stage_max);
  /// Bytes of staging memory both channels take.
  static uint64_t staging_bytes(uint32_t entries, uint64_t stage_max);

  /// Allocates both channels of `entries` requests (staging memory), the device channel's put staging for puts of
  /// at most `stage_max` bytes, and its device-memory side.
  Status create(uint32_t entries, uint64_t stage_max, int my_pe);

  tshmemi_proxy_channel *channel(int ring) const { return rings_[ring]; }
  /// The device channel's device-memory side (device address); nullptr without a GPU.
  tshmemi_proxy_device_side *device_side() const { return device_side_; }

  // --- the proxy thread ---
  /// Whether the next request of `ring` has been written.
  bool visible(int ring) const;
  /// The largest staged payload a request of `ring` may carry (0: that ring stages nothing).
  uint64_t stage_max(int ring) const { return ring == kDevice ? rings_[kDevice]->stage_max : 0; }
  /// Where the bytes [offset, offset + *bytes) of the payload of a staged request `r` lie in the device channel's
  /// put staging; *bytes shrinks to what lies there contiguously (the rest wraps to the ring's start).
  const void *staged(const tshmemi_proxy_request &r, uint64_t offset, uint64_t *bytes) const;
  /// Takes the next request: the channels alternate, except that a host QUIET waits for the device channel to
  /// empty (the host's quiet covers what kernels posted before it, as the kernels have finished by then).
  bool take(Taken *out);
  /// The request is handed on: its slot is freed once released(point) (the transport has read its source) and,
  /// with `result_slot`, once its reader has taken the value.
  void finish(const Taken &taken, uint64_t point, bool result_slot);
  /// Frees the slots of finished requests whose point is at most `released`, in ticket order; true when it did.
  bool release(uint64_t released);
  /// A QUIET posted as `ticket` of `ring` is complete.
  void complete(int ring, uint64_t ticket);
  /// A staged GET posted as `ticket` of `ring` is complete, its data in the staging: its result tag says so.
  void staged_get_complete(int ring, uint64_t ticket);
  /// The value of a result slot (`value_at`, the slot's value word) is written: now its tag, with release order.
  static void deliver(uint64_t value_at, uint64_t tag);

  // --- any thread ---
  /// The off-node path has stopped: the failure text, then TSHMEMI_PROXY_STOPPED in `tail`, `done` and every result
  /// tag, so that every producer's wait ends and reads the text. Only host memory is written.
  void stop(const std::string &message);

 private:
  struct Pending {
    uint64_t ticket, point;
    bool result_slot;             ///< freed only once its reader has taken the value (proxy_types.h)
    uint64_t stage_pos = 0;       ///< a staged put's reservation in the put staging
    uint64_t stage_reserved = 0;  ///< its bytes (0: none)
  };
  /// A reservation of the put staging is free: `stage_freed` moves over every free one that follows it.
  void free_staged(uint64_t pos, uint64_t reserved);
  bool result_taken(int ring, uint64_t ticket) const;

  ProxyMemory &memory_;
  tshmemi_proxy_channel *rings_[2] = {nullptr, nullptr};
  tshmemi_proxy_device_side *device_side_ = nullptr;  ///< owned by memory_ (device memory), nullptr on shm
  uint64_t next_[2] = {0, 0};                         ///< the next ticket to take from each ring
  std::deque<Pending> pending_[2];                    ///< taken tickets whose slots are not freed yet, per ring
  int last_ring_ = kHost;
  std::map<uint64_t, uint64_t> stage_free_;  ///< freed reservations above `stage_freed`: position -> bytes
  uint64_t stage_freed_ = 0;                 ///< the channel's stage_freed as this reader last stored it
};

}  // namespace tshmemi
