/*
 * The proxy channel: the one definition of a request to reach a PE of another node, shared by the device
 * API (kernels post), the host API and the tests (CPU producers post the same bytes), and the proxy thread
 * that drains it (src/transport/proxy.cc). Plain C so that host code builds it without CUDA.
 *
 * A channel is a ring of fixed-size requests. A producer takes a ticket (an atomic add on the head
 * counter), waits until the ring has room for it (ticket - tail < capacity: back-pressure), writes the slot
 * and stores `seq = ticket + 1` last, with release order. The proxy takes slots in ticket order, waits for
 * their `seq`, and advances `tail` once a request's local part is done (a put's source may then be reused).
 * A QUIET request completes when every request before it is complete at its target; the proxy then stores
 * `done = ticket + 1`. Fetching requests (get, fetching atomics) are complete, with their result written,
 * when a later QUIET is done.
 *
 * A staged put (TSHMEMI_PROXY_FLAG_STAGED) carries its payload in the device channel's put staging: a ring of
 * `stage_bytes` bytes of pinned host memory, mapped into the device, that the producer writes itself before it posts,
 * so that the proxy reads the payload with the CPU (no CUDA call in this process on the put's path). A producer
 * reserves `bytes` rounded up to 16 at position `pos` (an atomic add on the stage head: a byte count that only
 * grows), waits until `stage_freed` >= pos + reserved - stage_bytes (the bytes it overwrites were sent: flow
 * control), writes the payload at (pos + i) % stage_bytes, and posts the request with `local = pos`. The proxy
 * raises `stage_freed` once the requests of every reservation below it have been read out by the transport, in
 * position order (reservations and tickets may be taken in different orders by concurrent producers). A producer
 * reserves its staging before it takes its ticket, so a ticket is never held by a producer that waits for staging.
 * A staged GET's data lands at its position instead. Once the GET is complete the proxy stores the ticket's result
 * tag = ticket + 1 (a refused one's too); the producer waits for that tag (not for a QUIET: a QUIET needs a ticket,
 * and producers whose staged GETs hold every ticket of the ring would wait for one for ever), reads the data and
 * then stores tag = TSHMEMI_PROXY_RESULT_TAKEN(ticket), as a result slot's reader does; the ticket and its staging
 * are freed only then.
 *
 * A request with a result slot (TSHMEMI_PROXY_FLAG_RESULT_SLOT) keeps its ticket from being freed until its
 * reader has taken the value and stored `tag = TSHMEMI_PROXY_RESULT_TAKEN(ticket)`: the slot's next ticket
 * (`capacity` later) cannot be posted before, so its value cannot land on one not yet read.
 */
#ifndef TSHMEM_DEVICE_PROXY_TYPES_H
#define TSHMEM_DEVICE_PROXY_TYPES_H

#include <stddef.h>
#include <stdint.h>

/** Bump when the request or channel layout changes. */
#define TSHMEMI_PROXY_LAYOUT 5u

enum tshmemi_proxy_op {
  TSHMEMI_PROXY_PUT = 1,        /**< bytes from `local` (this PE) to heap offset `remote` of `pe`. */
  TSHMEMI_PROXY_GET = 2,        /**< bytes at heap offset `remote` of `pe` into `local`. */
  TSHMEMI_PROXY_PUT_SIGNAL = 3, /**< a put, then `signal_op` of `value` on the word at heap offset `signal`. */
  TSHMEMI_PROXY_SIGNAL = 4,     /**< `signal_op` of `value` on the 64-bit word at heap offset `remote`. */
  TSHMEMI_PROXY_AMO = 5,        /**< atomic `amo` of `width` bytes at heap offset `remote`; old value to `local`. */
  TSHMEMI_PROXY_FENCE = 6,      /**< orders the requests before it to each PE before those after it. */
  TSHMEMI_PROXY_QUIET = 7,      /**< completes every request before it; then done = ticket + 1. */
};

/** Request flags. */
enum tshmemi_proxy_flags {
  /** PUT of at most 8 bytes: the data is `value` itself, not at `local` (a kernel's register). */
  TSHMEMI_PROXY_FLAG_INLINE = 1u << 0,
  /** GET of at most 8 bytes or fetching AMO into this channel's result slot of the ticket: the proxy
   *  writes the value, then the slot's tag = ticket + 1 (a kernel waits for the tag, not for a QUIET). */
  TSHMEMI_PROXY_FLAG_RESULT_SLOT = 1u << 1,
  /** PUT or PUT_SIGNAL of the device channel whose payload is in its put staging at position `local`, or GET
   *  whose data is to land there (above). */
  TSHMEMI_PROXY_FLAG_STAGED = 1u << 2,
};

/** Signal operations (the values of TSHMEM_SIGNAL_SET / TSHMEM_SIGNAL_ADD). */
enum tshmemi_proxy_signal_op { TSHMEMI_PROXY_SIGNAL_SET = 0, TSHMEMI_PROXY_SIGNAL_ADD = 1 };

/** Atomic kinds. The fetching ones write the old value to `local` (width bytes). */
enum tshmemi_proxy_amo {
  TSHMEMI_AMO_SET = 1,
  TSHMEMI_AMO_ADD = 2,
  TSHMEMI_AMO_INC = 3,
  TSHMEMI_AMO_AND = 4,
  TSHMEMI_AMO_OR = 5,
  TSHMEMI_AMO_XOR = 6,
  TSHMEMI_AMO_FETCH = 16, /**< the non-fetching kinds plus this bit fetch; FETCH itself reads. */
  TSHMEMI_AMO_FETCH_ADD = 16 | 2,
  TSHMEMI_AMO_FETCH_INC = 16 | 3,
  TSHMEMI_AMO_FETCH_AND = 16 | 4,
  TSHMEMI_AMO_FETCH_OR = 16 | 5,
  TSHMEMI_AMO_FETCH_XOR = 16 | 6,
  TSHMEMI_AMO_SWAP = 16 | 7,
  TSHMEMI_AMO_CSWAP = 16 | 8, /**< compare `compare`, swap in `value`. */
};

/** One request: 64 bytes, trivially copyable. */
typedef struct tshmemi_proxy_request {
  uint64_t seq;     /**< ticket + 1, stored last by the producer (release); the slot is valid when it matches. */
  uint8_t op;       /**< tshmemi_proxy_op. */
  uint8_t amo;      /**< AMO: tshmemi_proxy_amo; PUT_SIGNAL and SIGNAL: tshmemi_proxy_signal_op. */
  uint8_t width;    /**< AMO: operand bytes, 4 or 8. */
  uint8_t flags;    /**< tshmemi_proxy_flags. */
  int32_t pe;       /**< target PE, in [0, n_pes). */
  uint64_t remote;  /**< heap offset at the target. */
  uint64_t local;   /**< address at this PE: put source, get destination, fetched value's destination. */
  uint64_t bytes;   /**< PUT, GET, PUT_SIGNAL: bytes to move. */
  uint64_t value;   /**< AMO operand; signal value. */
  uint64_t compare; /**< CSWAP: the value compared. */
  uint64_t signal;  /**< PUT_SIGNAL: heap offset of the 64-bit signal word at the target. */
} tshmemi_proxy_request;

/** The ring's header; `capacity` requests follow it (tshmemi_proxy_slots). Counters on cache lines of their own. */
typedef struct tshmemi_proxy_channel {
  uint64_t head; /**< next ticket, for host producers (device producers count in `head_ptr`). */
  uint64_t pad0[7];
  uint64_t tail; /**< tickets the proxy has taken: their slots are free, a put's source reusable. */
  uint64_t pad1[7];
  uint64_t done; /**< every request with ticket < done is complete (stored when a QUIET completes). */
  uint64_t pad2[7];
  uint32_t layout;        /**< TSHMEMI_PROXY_LAYOUT. */
  uint32_t capacity;      /**< requests in the ring: a power of two, >= 2. */
  uint64_t *head_ptr;     /**< where producers count tickets: &head, or a device-memory word for kernels. */
  uint64_t stage_freed;   /**< put staging: every byte below this position is free again (written by the proxy). */
  uint64_t stage_head;    /**< put staging: the next position, for host producers (kernels count in device memory). */
  unsigned char *staging; /**< put staging: `stage_bytes` bytes (host address); NULL on the host channel. */
  uint64_t stage_bytes;   /**< put staging: its size, a multiple of 16 (0: none). */
  uint64_t stage_max;     /**< put staging: the largest payload a producer stages (TSHMEM_PROXY_STAGE_MAX). */
  uint64_t pad3[1];
} tshmemi_proxy_channel;

/**
 * Once the off-node path has stopped (a failure here or at another PE, or a wait past its bound), the proxy
 * stores this in `tail`, `done`, `stage_freed` and every result slot's tag: every wait on them ends at once, and the
 * waiter reports the message the proxy wrote into the channel's failure text (tshmemi_proxy_failure).
 */
#define TSHMEMI_PROXY_STOPPED (~(uint64_t)0)
/** Bytes of the failure text at the end of a channel. */
#define TSHMEMI_PROXY_FAILURE_BYTES 512

#ifdef __cplusplus
static_assert(sizeof(tshmemi_proxy_request) == 64, "request layout: bump TSHMEMI_PROXY_LAYOUT");
static_assert(sizeof(tshmemi_proxy_channel) == 256, "channel layout: bump TSHMEMI_PROXY_LAYOUT");
#endif

/**
 * The device-memory side of the device channel, for kernels only (on a GPU heap; none on shm). Kernels take
 * tickets here and read copies of the channel's counters here, because reading mapped host memory from many
 * warps at once starves the GPU's copy engines and its command fetch: on an H200, 32 blocks polling one host
 * word cut device-to-host copies from 55 to 5.3 GB/s and stretched an 8-byte copy's round trip from 6 to 85 us,
 * whatever the pause between reads; one poller cost nothing measurable. So one thread at a time (the holder
 * of `poll_gate`) reads the host words and raises the copies; every other waiter reads device memory.
 */
typedef struct tshmemi_proxy_device_side {
  uint64_t head;       /**< next ticket (the device channel's head_ptr points here). */
  uint64_t tail_seen;  /**< the highest `tail` a kernel has read: a lower bound of the channel's. */
  uint64_t done_seen;  /**< the highest `done` a kernel has read. */
  uint32_t capacity;   /**< the channel's, so that a post reads no host memory. */
  uint32_t poll_gate;  /**< 1 while a thread reads the channel's host words. */
  const char *failure; /**< the channel's failure text (tshmemi_proxy_failure) as kernels address it. */
  int32_t my_pe;       /**< this PE (for the failure message). */
  uint32_t pad32;
  uint64_t stage_head;       /**< put staging: the next position (the channel's stage_head, for kernels). */
  uint64_t stage_freed_seen; /**< the highest `stage_freed` a kernel has read. */
  unsigned char *staging;    /**< put staging as kernels address it (NULL: kernels stage nothing). */
  uint64_t stage_bytes;      /**< the channel's. */
  uint64_t stage_max;        /**< the channel's: larger puts are copied by the proxy from the GPU heap. */
  uint64_t pad[5];
} tshmemi_proxy_device_side;

#ifdef __cplusplus
static_assert(sizeof(tshmemi_proxy_device_side) == 128, "device side layout: bump TSHMEMI_PROXY_LAYOUT");
#endif

/** What a reader stores in a result slot's tag once it has the value of `ticket`. */
#define TSHMEMI_PROXY_RESULT_TAKEN(ticket) (~((uint64_t)(ticket) + 1u))

/** A fetched value for a kernel, by ticket (`capacity` of them follow the requests). */
typedef struct tshmemi_proxy_result {
  uint64_t value;
  uint64_t tag; /**< ticket + 1 of the request whose value this is. */
} tshmemi_proxy_result;

/** Bytes of put staging a payload of `bytes` reserves: whole 16-byte units, so every payload starts aligned. */
#define TSHMEMI_PROXY_STAGE_RESERVED(bytes) (((uint64_t)(bytes) + 15u) & ~(uint64_t)15u)

/** Bytes of a channel of `capacity` requests: header, requests, result slots, failure text. */
#define TSHMEMI_PROXY_CHANNEL_BYTES(capacity) \
  (sizeof(tshmemi_proxy_channel) +            \
   (size_t)(capacity) * (sizeof(tshmemi_proxy_request) + sizeof(tshmemi_proxy_result)) + TSHMEMI_PROXY_FAILURE_BYTES)

#ifdef __CUDACC__
#define TSHMEMI_PROXY_HD __host__ __device__
#else
#define TSHMEMI_PROXY_HD
#endif

/** The slots of a channel. */
TSHMEMI_PROXY_HD static inline tshmemi_proxy_request *tshmemi_proxy_slots(tshmemi_proxy_channel *channel) {
  return (tshmemi_proxy_request *)(channel + 1);
}

/** The result slots of a channel of `capacity` requests. */
TSHMEMI_PROXY_HD static inline tshmemi_proxy_result *tshmemi_proxy_results(tshmemi_proxy_channel *channel,
                                                                           uint32_t capacity) {
  return (tshmemi_proxy_result *)(tshmemi_proxy_slots(channel) + capacity);
}

/** The failure text of a channel of `capacity` requests: empty until the off-node path stops. */
TSHMEMI_PROXY_HD static inline char *tshmemi_proxy_failure(tshmemi_proxy_channel *channel, uint32_t capacity) {
  return (char *)(tshmemi_proxy_results(channel, capacity) + capacity);
}

#ifdef __cplusplus
extern "C" {
#endif

/**
 * This PE's channel for device-initiated requests while tshmem is initialised and the off-node transport is up,
 * else NULL. On the shm heap its memory is plain host memory, so a CPU thread may post to it as a kernel would
 * (the tests' producer); on a GPU heap it is pinned host memory mapped into the device.
 */
__attribute__((visibility("default"))) tshmemi_proxy_channel *tshmemi_proxy_device_channel(void);

/** How many requests this PE's proxy has refused since init, and the message of the last one (into `text`). */
__attribute__((visibility("default"))) uint64_t tshmemi_proxy_refused(char *text, size_t text_bytes);

/** For tests: this PE's proxy sends PE `pe` a get reply of `bytes` with request id `id` that nobody asked for
 *  (what a broken or hostile peer could send); the target must refuse it. 0 when sent. */
__attribute__((visibility("default"))) int tshmemi_proxy_send_unsolicited_reply(int pe, uint64_t id, uint64_t bytes);

/** For tests: a host put of `bytes` from `src` to heap offset `heap_offset` of PE `pe`, a PE of another node, through
 *  the off-node transport without the checks of tshmem_putmem (what a broken or hostile peer could send); the
 *  target must refuse what falls outside its heap or into the region tshmem keeps. The put's status. */
__attribute__((visibility("default"))) int tshmemi_proxy_put_unchecked(int pe, uint64_t heap_offset, const void *src,
                                                                       size_t bytes);

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && !defined(__CUDA_ARCH__)
/* Host producers: any number of threads may post to one channel at once. */
#include <sched.h>

/** Posts `request` (its seq is ignored) and returns its ticket. Waits while the ring is full. */
static inline uint64_t tshmemi_proxy_post(tshmemi_proxy_channel *channel, const tshmemi_proxy_request *request) {
  const uint64_t ticket = __atomic_fetch_add(channel->head_ptr, 1, __ATOMIC_RELAXED);
  for (unsigned spins = 0; ticket - __atomic_load_n(&channel->tail, __ATOMIC_ACQUIRE) >= channel->capacity; ++spins)
    if (spins > 64) sched_yield(); /* the proxy may need this core */
  tshmemi_proxy_request *slot = tshmemi_proxy_slots(channel) + (ticket & (channel->capacity - 1));
  tshmemi_proxy_request copy = *request;
  copy.seq = 0;
  if (copy.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT)
    copy.local = reinterpret_cast<uint64_t>(
        &tshmemi_proxy_results(channel, channel->capacity)[ticket & (channel->capacity - 1)].value);
  // Every field but seq first, then seq with release order: the proxy sees a whole request or none.
  __builtin_memcpy(reinterpret_cast<char *>(slot) + sizeof(uint64_t),
                   reinterpret_cast<const char *>(&copy) + sizeof(uint64_t), sizeof(copy) - sizeof(uint64_t));
  __atomic_store_n(&slot->seq, ticket + 1, __ATOMIC_RELEASE);
  return ticket;
}

/** Reserves `bytes` of the channel's put staging (producers' side, see above), waits until they are free and
 *  returns the position; the caller writes the payload (tshmemi_proxy_stage_write) and posts with `local` = it. */
static inline uint64_t tshmemi_proxy_stage_reserve(tshmemi_proxy_channel *channel, uint64_t bytes) {
  const uint64_t reserved = TSHMEMI_PROXY_STAGE_RESERVED(bytes);
  const uint64_t pos = __atomic_fetch_add(&channel->stage_head, reserved, __ATOMIC_RELAXED);
  for (unsigned spins = 0;
       pos + reserved > channel->stage_bytes &&
       __atomic_load_n(&channel->stage_freed, __ATOMIC_ACQUIRE) < pos + reserved - channel->stage_bytes;
       ++spins)
    if (spins > 64) sched_yield();
  return pos;
}

/** Writes `bytes` at staging position `pos` (wrapping at the end of the ring). */
static inline void tshmemi_proxy_stage_write(tshmemi_proxy_channel *channel, uint64_t pos, const void *src,
                                             uint64_t bytes) {
  const uint64_t at = pos % channel->stage_bytes;
  const uint64_t first = bytes < channel->stage_bytes - at ? bytes : channel->stage_bytes - at;
  __builtin_memcpy(channel->staging + at, src, first);
  __builtin_memcpy(channel->staging, (const unsigned char *)src + first, bytes - first);
}

/** True once the request with `ticket` has been taken by the proxy (its source may be reused). */
static inline bool tshmemi_proxy_taken(const tshmemi_proxy_channel *channel, uint64_t ticket) {
  return __atomic_load_n(&channel->tail, __ATOMIC_ACQUIRE) > ticket;
}

/** Waits for the value of a request posted with TSHMEMI_PROXY_FLAG_RESULT_SLOT as `ticket`, takes it and
 *  frees the slot (once per ticket). */
static inline uint64_t tshmemi_proxy_result_wait(tshmemi_proxy_channel *channel, uint64_t ticket) {
  tshmemi_proxy_result *slot = tshmemi_proxy_results(channel, channel->capacity) + (ticket & (channel->capacity - 1));
  for (unsigned spins = 0; __atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) != ticket + 1; ++spins)
    if (spins > 64) sched_yield();
  const uint64_t value = __atomic_load_n(&slot->value, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->tag, TSHMEMI_PROXY_RESULT_TAKEN(ticket), __ATOMIC_RELEASE); /* the value read first */
  return value;
}

/** True once a QUIET posted with `ticket` is done. */
static inline bool tshmemi_proxy_done(const tshmemi_proxy_channel *channel, uint64_t ticket) {
  return __atomic_load_n(&channel->done, __ATOMIC_ACQUIRE) > ticket;
}
#endif

#endif /* TSHMEM_DEVICE_PROXY_TYPES_H */
