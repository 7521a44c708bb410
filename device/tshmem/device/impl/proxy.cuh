// Device operations to PEs of other nodes: requests posted to this PE's proxy channel (proxy_types.h), drained
// by the host proxy thread. Every entry point is __noinline__ cold code: an on-node operation only carries the
// test of its peer slot and a call it never takes.
#ifndef TSHMEM_DEVICE_IMPL_PROXY_CUH
#define TSHMEM_DEVICE_IMPL_PROXY_CUH

#include "tshmem/device/impl/group.cuh"
#include "tshmem/device/impl/remote_ptr.cuh"
#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/proxy_types.h"
#include "tshmem/device/state.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {
namespace proxy {

TSHMEMI_DEVICE tshmemi_proxy_channel *channel(const tshmemi_device_state &st) { return st.proxy_channel; }

template <class T>
TSHMEMI_DEVICE T load_volatile(const T *p) {
  return *static_cast<const volatile T *>(p);
}

TSHMEMI_DEVICE_COLD void trap_no_channel(const char *call, int pe, const tshmemi_device_state &st) {
  if (is_print_leader())
    printf(
        "tshmem: %s: PE %d is on another node and not reachable from PE %d: %s (block (%u,%u,%u), thread (%u,%u,%u))\n",
        call, pe, st.my_pe,
        (st.flags & TSHMEMI_STATE_PROXY_UNAVAILABLE)
            ? "the off-node proxy is not running: MPI was initialised without MPI_THREAD_MULTIPLE (see the "
              "warning at init)"
            : "this PE has no off-node proxy channel (its state was not published by tshmem_init)",
        blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
}

TSHMEMI_DEVICE tshmemi_proxy_device_side *device_side(const tshmemi_device_state &st) { return st.proxy_device_side; }

/// Reads `host` (a word of the channel, in mapped host memory) if no other thread of this GPU is reading one:
/// true with *value when it did. One reader at a time (proxy_types.h, tshmemi_proxy_device_side: why).
TSHMEMI_DEVICE bool read_host_word_gated(const uint64_t *host, tshmemi_proxy_device_side *ds, uint64_t *value) {
  if (atomicCAS(&ds->poll_gate, 0u, 1u) != 0u) return false;
  *value = load_volatile(host);
  __threadfence();
  atomicExch(&ds->poll_gate, 0u);
  return true;
}

/// The end of a kernel's wait for its proxy when the off-node path has stopped (the proxy's counters and result
/// tags read TSHMEMI_PROXY_STOPPED): the message the host side wrote says which wait, to which PE, and why. The
/// bound on every such wait is kept by the host side (transport/proxy.cc), so the poll loops stay as small as
/// they were: a kernel that can reach the proxy allocates registers for its deepest call chain, on-node code too.
/// For the same reason the waits inside post (a full channel) and fetch (g, fetching atomics) trap without this
/// line: there the proxy's own log line, printed when it stopped the path, is the message.
[[noreturn]] TSHMEMI_DEVICE_COLD void trap_proxy_stopped(const tshmemi_proxy_device_side *ds) {
  // Two arguments: this function's registers count in every kernel that can reach the proxy.
  if (is_print_leader())
    printf("tshmem: PE %d: a kernel's wait for the off-node proxy gives up: %s\n", ds->my_pe, ds->failure);
  __trap();
  __builtin_unreachable();
}

/// Waits until the channel's counter `host` (tail or done) exceeds `ticket`. Waiters read its device-memory
/// copy `seen`; the thread that holds the gate reads the host word and raises the copy for all of them. False
/// when the path has stopped (the caller traps: this loop stays a leaf).
TSHMEMI_DEVICE_COLD bool wait_above(const uint64_t *host, uint64_t *seen, unsigned long long ticket,
                                    tshmemi_proxy_device_side *ds) {
  while (load_volatile(seen) <= ticket) {
    uint64_t now = 0;
    if (read_host_word_gated(host, ds, &now)) {
      atomicMax(reinterpret_cast<unsigned long long *>(seen), static_cast<unsigned long long>(now));
      if (now > ticket) break;
    }
    __nanosleep(128);
  }
  __threadfence_system();  // what the proxy completed before raising the counter is seen after it
  return load_volatile(seen) != TSHMEMI_PROXY_STOPPED;
}

/// The end of a kernel's wait for room in its put staging (proxy_types.h) when the off-node path has stopped.
[[noreturn]] TSHMEMI_DEVICE_COLD void trap_staging_stopped(const tshmemi_proxy_device_side *ds) {
  if (is_print_leader())
    printf(
        "tshmem: PE %d: a kernel's wait for room in its put staging (%llu bytes, held by staged puts its off-node "
        "proxy has not sent yet) gives up: %s\n",
        ds->my_pe, static_cast<unsigned long long>(ds->stage_bytes), ds->failure);
  __trap();
  __builtin_unreachable();
}

/// Reserves `bytes` of the put staging and waits until they are free (the proxy has sent what was there before);
/// returns the position. Reads no host memory unless the staging looks full.
TSHMEMI_DEVICE_COLD unsigned long long stage_reserve(uint64_t bytes, const tshmemi_device_state &st) {
  tshmemi_proxy_device_side *ds = device_side(st);
  const uint64_t reserved = TSHMEMI_PROXY_STAGE_RESERVED(bytes);
  const unsigned long long pos = atomicAdd(reinterpret_cast<unsigned long long *>(&ds->stage_head), reserved);
  const uint64_t size = ds->stage_bytes;
  if (pos + reserved > size &&
      !wait_above(&channel(st)->stage_freed, &ds->stage_freed_seen, pos + reserved - size - 1, ds))
    trap_staging_stopped(ds);
  return pos;
}

/// The group copies `bytes` from `src` to `dst` (16-byte aligned, mapped host memory) in the widest units both
/// allow: consecutive threads store consecutive units, so a warp's stores coalesce into whole lines. Lighter than
/// copy_bytes (impl/copy.cuh), whose four loads in flight took thread- and warp-scope put kernels from 46 to 62
/// registers: every kernel that may put pays for the copy.
template <class Scope, class Unit>
TSHMEMI_DEVICE size_t stage_units(unsigned char *dst, const unsigned char *src, size_t bytes) {
  const size_t units = bytes / sizeof(Unit);
  for (size_t u = group<Scope>::rank(); u < units; u += group<Scope>::size())
    reinterpret_cast<Unit *>(dst)[u] = reinterpret_cast<const Unit *>(src)[u];
  return units * sizeof(Unit);
}

template <class Scope>
TSHMEMI_DEVICE void stage_copy(unsigned char *dst, const unsigned char *src, size_t bytes) {
  const uintptr_t align = reinterpret_cast<uintptr_t>(src);
  size_t done = 0;
  if ((align & 15u) == 0)
    done = stage_units<Scope, uint4>(dst, src, bytes);
  else if ((align & 7u) == 0)
    done = stage_units<Scope, uint2>(dst, src, bytes);
  else if ((align & 3u) == 0)
    done = stage_units<Scope, unsigned>(dst, src, bytes);
  for (size_t i = done + group<Scope>::rank(); i < bytes; i += group<Scope>::size()) dst[i] = src[i];
}

/// Posts `*request` and returns its ticket: takes a ticket, waits while the ring is full (back-pressure), writes the
/// slot and stores its seq last. With TSHMEMI_PROXY_FLAG_RESULT_SLOT, `local` becomes the ticket's result slot.
/// Reads no host memory unless the ring looks full. The request comes by pointer, not by value: its 64 bytes as
/// arguments took registers on top of what the caller keeps across the call, and a kernel allocates registers for
/// its deepest call chain, on-node code too (a thread-scope getmem in a loop: 86 registers by value, 64 by pointer).
TSHMEMI_DEVICE_COLD unsigned long long post(tshmemi_proxy_request *request, const char *call,
                                            const tshmemi_device_state &st) {
  tshmemi_proxy_request &r = *request;
  tshmemi_proxy_channel *ch = channel(st);
  tshmemi_proxy_device_side *ds = device_side(st);
  if (ch == nullptr || ds == nullptr) trap_no_channel(call, r.pe, st);
  const uint32_t capacity = ds->capacity;
  const unsigned long long ticket = atomicAdd(reinterpret_cast<unsigned long long *>(&ds->head), 1ull);
  // A stopped path ends this wait too. The trap here prints nothing (a printf here would cost every caller
  // registers): the proxy's own log line, written when it stopped the path, names the wait.
  if (ticket >= capacity && !wait_above(&ch->tail, &ds->tail_seen, ticket - capacity, ds)) __trap();
  const uint32_t index = static_cast<uint32_t>(ticket & (capacity - 1));
  if (r.flags & TSHMEMI_PROXY_FLAG_RESULT_SLOT)
    r.local = reinterpret_cast<uint64_t>(&tshmemi_proxy_results(ch, capacity)[index].value);
  const uint64_t *from = reinterpret_cast<const uint64_t *>(&r);
  volatile uint64_t *to = reinterpret_cast<volatile uint64_t *>(tshmemi_proxy_slots(ch) + index);
  for (int i = 1; i < 8; ++i) to[i] = from[i];
  __threadfence_system();  // the whole request before its seq
  to[0] = ticket + 1;
  return ticket;
}

/// Waits until the proxy has taken `ticket` (a put's source may be reused).
TSHMEMI_DEVICE_COLD void wait_taken(unsigned long long ticket, const tshmemi_device_state &st) {
  tshmemi_proxy_device_side *ds = device_side(st);
  if (!wait_above(&channel(st)->tail, &ds->tail_seen, ticket, ds)) trap_proxy_stopped(ds);
}

/// Every request this PE posted before is complete at its target (and every get's destination filled).
TSHMEMI_DEVICE_COLD void quiet(const tshmemi_device_state &st) {
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_QUIET;
  r.pe = st.my_pe;
  const unsigned long long ticket = post(&r, "tshmem_quiet", st);
  tshmemi_proxy_device_side *ds = device_side(st);
  if (!wait_above(&channel(st)->done, &ds->done_seen, ticket, ds)) trap_proxy_stopped(ds);
}

/// Waits until the staged GET posted as `ticket` is complete: its data is in the staging (proxy_types.h).
TSHMEMI_DEVICE_COLD void wait_staged_get(unsigned long long ticket, const tshmemi_device_state &st) {
  tshmemi_proxy_device_side *ds = device_side(st);
  const tshmemi_proxy_result *slot = tshmemi_proxy_results(channel(st), ds->capacity) + (ticket & (ds->capacity - 1));
  uint64_t tag = 0;
  while (!read_host_word_gated(&slot->tag, ds, &tag) || (tag != ticket + 1 && tag != TSHMEMI_PROXY_STOPPED))
    __nanosleep(128);
  if (tag == TSHMEMI_PROXY_STOPPED) trap_proxy_stopped(ds);
  __threadfence_system();  // the tag before the data it announces
}

/// Posts a GET of at most 8 bytes or a fetching atomic and returns the value (one round trip, no QUIET).
TSHMEMI_DEVICE_COLD uint64_t fetch(tshmemi_proxy_request r, const char *call, const tshmemi_device_state &st) {
  r.flags |= TSHMEMI_PROXY_FLAG_RESULT_SLOT;
  const unsigned long long ticket = post(&r, call, st);
  tshmemi_proxy_channel *ch = channel(st);
  tshmemi_proxy_device_side *ds = device_side(st);
  tshmemi_proxy_result *slot = tshmemi_proxy_results(ch, ds->capacity) + (ticket & (ds->capacity - 1));
  uint64_t tag = 0;
  while (!read_host_word_gated(&slot->tag, ds, &tag) || (tag != ticket + 1 && tag != TSHMEMI_PROXY_STOPPED))
    __nanosleep(128);
  if (tag == TSHMEMI_PROXY_STOPPED) __trap();  // as in post: the proxy's log line names the wait
  __threadfence_system();
  const uint64_t value = load_volatile(&slot->value);
  __threadfence_system();  // the value is read before the slot is handed back (proxy_types.h)
  *reinterpret_cast<volatile uint64_t *>(&slot->tag) = TSHMEMI_PROXY_RESULT_TAKEN(ticket);
  return value;
}

TSHMEMI_DEVICE_COLD void trap_registered_off_node(uint64_t offset, int me) {
  if (is_print_leader())
    printf(
        "tshmem: a registered buffer (heap offset %llu, past the heap) is reachable from its own node only: the "
        "off-node proxy serves the heap (PE %d, block (%u,%u,%u), thread (%u,%u,%u))\n",
        static_cast<unsigned long long>(offset), me, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
        threadIdx.z);
  __trap();
}

/// `offset` (heap_offset_of) if it lies in the heap; past it (a registered buffer) traps. The entry points take
/// heap offsets, not pointers: the caller computes the offset before its peer-slot test for both paths, so the
/// on-node path loads the heap base where it likes (outside loops) instead of after the test.
TSHMEMI_DEVICE uint64_t checked_offset(uint64_t offset, const tshmemi_device_state &st) {
  if (offset >= st.heap_size) trap_registered_off_node(offset, st.my_pe);  // never silently dropped by the proxy
  return offset;
}

/// Whether a group of this scope stages its payloads. Not a block: a kernel's register count is the most any
/// function it may call uses, and the staged copy took a block-scope get from 48 to 80 registers (a put with signal
/// from 56 to 68), past the 64 a 1024-thread block can give each thread, so such a kernel would not launch. A
/// block's puts and gets take the proxy's copy (docs/design.md, "Kernels that wait on the proxy").
template <class Scope>
TSHMEMI_DEVICE constexpr bool stages() {
  return !std::is_same<Scope, tshmem::block_scope>::value;
}

/// Whether a put of `nbytes` goes through the put staging: the kernel writes its payload into pinned host memory
/// and the proxy reads it there with the CPU, so no CUDA call of this process (a copy that a module load holds
/// behind this very kernel) lies on its path. Larger puts are copied by the proxy's copy engine, which moves them
/// faster than the proxy thread's memcpy (TSHMEM_PROXY_STAGE_MAX, docs/design.md).
TSHMEMI_DEVICE bool staged_put(size_t nbytes, const tshmemi_device_state &st) {
  const tshmemi_proxy_device_side *ds = device_side(st);
  return ds != nullptr && ds->staging != nullptr && nbytes <= ds->stage_max;
}

/// A put (or put with signal: `r` carries it) through the put staging: the leader reserves the payload's room, the
/// group writes it, each thread fences its stores (system scope), and the leader then posts the request. The
/// source may be reused on return: the payload is in the staging.
template <class Scope>
TSHMEMI_DEVICE_COLD void put_through_staging(tshmemi_proxy_request r, const void *src, const char *call,
                                             const tshmemi_device_state &st) {
  tshmemi_proxy_device_side *ds = device_side(st);
  unsigned long long pos = 0;
  if (group<Scope>::rank() == 0) pos = stage_reserve(r.bytes, st);
  pos = group<Scope>::share(pos);
  const uint64_t at = pos % ds->stage_bytes;
  const uint64_t first = r.bytes < ds->stage_bytes - at ? r.bytes : ds->stage_bytes - at;  // then it wraps
  const unsigned char *from = static_cast<const unsigned char *>(src);
  stage_copy<Scope>(ds->staging + at, from, first);
  stage_copy<Scope>(ds->staging, from + first, r.bytes - first);
  __threadfence_system();  // this thread's payload stores before the request that publishes them
  group<Scope>::sync();
  if (group<Scope>::rank() == 0) {
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    r.local = pos;
    post(&r, call, st);
  }
  group<Scope>::sync();
}

/// put / put_nbi of any scope: the group's leader posts one request for the whole range.
template <class Scope>
TSHMEMI_DEVICE_COLD void put(uint64_t dest_offset, const void *src, size_t nbytes, int pe, bool blocking,
                             const char *call, const tshmemi_device_state &st) {
  __threadfence();  // this thread's writes to src reach memory the copy engine reads
  group<Scope>::sync();
  if (stages<Scope>() && nbytes > 8 && staged_put(nbytes, st)) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = pe;
    r.remote = checked_offset(dest_offset, st);
    r.bytes = nbytes;
    put_through_staging<Scope>(r, src, call, st);
    return;
  }
  if (group<Scope>::rank() == 0) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = pe;
    r.remote = checked_offset(dest_offset, st);
    r.bytes = nbytes;
    if (nbytes <= 8) {  // the data travels in the request, as a p's: the proxy need not copy it off the GPU
      r.flags = TSHMEMI_PROXY_FLAG_INLINE;
      for (size_t i = 0; i < nbytes; ++i)
        reinterpret_cast<unsigned char *>(&r.value)[i] = static_cast<const unsigned char *>(src)[i];
    } else {
      r.local = reinterpret_cast<uint64_t>(src);
    }
    const unsigned long long ticket = post(&r, call, st);
    if (blocking) wait_taken(ticket, st);
  }
  group<Scope>::sync();
}

/// The group copies `bytes` at staging position `pos` (wrapping at the end of the ring) to `dst`, reading the mapped
/// host memory past the caches (what the proxy wrote there is seen, not an earlier line of the same staging).
template <class Scope, class Unit>
TSHMEMI_DEVICE size_t unstage_units(unsigned char *dst, const unsigned char *src, size_t bytes) {
  const size_t units = bytes / sizeof(Unit);
#pragma unroll 1  // unrolled, a kernel with a thread-scope get in a loop took 66 registers; src and dst may alias,
  // so no load moves above an earlier store and unrolling put no more loads in flight
  for (size_t u = group<Scope>::rank(); u < units; u += group<Scope>::size())
    reinterpret_cast<Unit *>(dst)[u] = __ldcv(reinterpret_cast<const Unit *>(src) + u);
  return units * sizeof(Unit);
}

template <class Scope>
TSHMEMI_DEVICE void unstage_segment(unsigned char *dst, const unsigned char *src, size_t bytes) {
  const uintptr_t align = reinterpret_cast<uintptr_t>(dst);
  size_t done = 0;
  if ((align & 15u) == 0)
    done = unstage_units<Scope, uint4>(dst, src, bytes);
  else if ((align & 7u) == 0)
    done = unstage_units<Scope, uint2>(dst, src, bytes);
  else if ((align & 3u) == 0)
    done = unstage_units<Scope, unsigned>(dst, src, bytes);
#pragma unroll 1
  for (size_t i = done + group<Scope>::rank(); i < bytes; i += group<Scope>::size()) dst[i] = __ldcv(src + i);
}

template <class Scope>
TSHMEMI_DEVICE void unstage_copy(unsigned char *dst, uint64_t pos, size_t bytes, const tshmemi_proxy_device_side *ds) {
  const uint64_t at = pos % ds->stage_bytes;
  const uint64_t first = bytes < ds->stage_bytes - at ? bytes : ds->stage_bytes - at;  // then it wraps
  unstage_segment<Scope>(dst, ds->staging + at, first);
  unstage_segment<Scope>(dst + first, ds->staging, bytes - first);
}

/// Whether a get of `nbytes` lands in the staging: at most TSHMEM_PROXY_STAGE_MAX, and at most 256 bytes per thread
/// of the group, as every load of mapped host memory is a PCIe round trip its thread waits for (a thread's get of
/// 64 KiB would wait for 4,096 of them; the proxy's copy engine moves it in one copy).
template <class Scope>
TSHMEMI_DEVICE bool staged_get(size_t nbytes, const tshmemi_device_state &st) {
  return nbytes <= 256u * group<Scope>::size() && staged_put(nbytes, st);
}

/// get / get_nbi of any scope: complete on return (an nbi get is allowed to be). Up to TSHMEM_PROXY_STAGE_MAX bytes
/// the data lands in the put staging (host memory, written by the proxy with the CPU: no CUDA call in this process)
/// and the group copies it out; the leader then frees the ticket (proxy_types.h).
/// A get through the staging (staged_get): the leader posts it and waits for its result tag (the proxy sets it once
/// the data is in the staging; a QUIET of its own would need a ticket, which staged gets holding the whole ring could
/// leave it none of), the group copies the data out of the staging, then the leader hands the ticket and its staging
/// back. Inlined into proxy::get (thread and
/// warp scope only: a block does not stage): a kernel keeps what is live across each call of the chain in registers
/// of its own, so one call level less took a thread-scope getmem in a loop from 70 registers to 64, a warp-scope one
/// from 62 to 40.
template <class Scope>
TSHMEMI_DEVICE void get_through_staging(void *dest, uint64_t src_offset, size_t nbytes, int pe, const char *call,
                                        const tshmemi_device_state &st) {
  tshmemi_proxy_device_side *ds = device_side(st);
  unsigned long long pos = 0, ticket = 0;
  if (group<Scope>::rank() == 0) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    r.pe = pe;
    r.remote = checked_offset(src_offset, st);
    r.bytes = nbytes;
    r.local = pos = stage_reserve(nbytes, st);
    ticket = post(&r, call, st);
    wait_staged_get(ticket, st);
  }
  pos = group<Scope>::share(pos);
  unstage_copy<Scope>(static_cast<unsigned char *>(dest), pos, nbytes, ds);
  group<Scope>::sync();
  if (group<Scope>::rank() == 0) {
    tshmemi_proxy_result *slot = tshmemi_proxy_results(channel(st), ds->capacity) + (ticket & (ds->capacity - 1));
    __threadfence_system();  // the data is read before the ticket and its staging are handed back
    *reinterpret_cast<volatile uint64_t *>(&slot->tag) = TSHMEMI_PROXY_RESULT_TAKEN(ticket);
  }
  group<Scope>::sync();
}

template <class Scope>
TSHMEMI_DEVICE_COLD void get(void *dest, uint64_t src_offset, size_t nbytes, int pe, const char *call,
                             const tshmemi_device_state &st) {
  group<Scope>::sync();
  if (stages<Scope>() && nbytes > 0 && staged_get<Scope>(nbytes, st)) {
    get_through_staging<Scope>(dest, src_offset, nbytes, pe, call, st);
    return;
  }
  if (group<Scope>::rank() == 0) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.pe = pe;
    r.remote = checked_offset(src_offset, st);
    r.local = reinterpret_cast<uint64_t>(dest);
    r.bytes = nbytes;
    post(&r, call, st);
    quiet(st);
  }
  group<Scope>::sync();
}

/// p: the value travels in the request.
TSHMEMI_DEVICE_COLD void put_value(uint64_t dest_offset, uint64_t bits, unsigned bytes, int pe, const char *call,
                                   const tshmemi_device_state &st) {
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_PUT;
  r.flags = TSHMEMI_PROXY_FLAG_INLINE;
  r.pe = pe;
  r.remote = checked_offset(dest_offset, st);
  r.bytes = bytes;
  r.value = bits;
  post(&r, call, st);
}

/// g: one round trip into the ticket's result slot.
TSHMEMI_DEVICE_COLD uint64_t get_value(uint64_t src_offset, unsigned bytes, int pe, const char *call,
                                       const tshmemi_device_state &st) {
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_GET;
  r.pe = pe;
  r.remote = checked_offset(src_offset, st);
  r.bytes = bytes;
  return fetch(r, call, st);
}

/// p and g of a PE of another node, shaped for the on-node code around them: the caller's store or load
/// follows the call on the straight path, as it followed the trap before the proxy, through the slot returned
/// here, which makes slot + heap offset the caller's `scratch`. A branch around the store instead would move
/// the kernel's loop test behind the call's join and cost the on-node p ~20 cycles per operation (sm_90).
/// p: posts `value`; the caller's store then lands in `scratch`, which nothing reads.
template <class T>
TSHMEMI_DEVICE_COLD uint64_t put_value_then_scratch(uint64_t dest_offset, T value, int pe, const char *call,
                                                    const tshmemi_device_state &st, T *scratch) {
  uint64_t bits = 0;
  memcpy(&bits, &value, sizeof(T));
  put_value(dest_offset, bits, sizeof(T), pe, call, st);
  return reinterpret_cast<uint64_t>(scratch) - dest_offset;
}

/// g: fetches the value into `scratch`, where the caller's load then reads it.
template <class T>
TSHMEMI_DEVICE_COLD uint64_t get_value_into_scratch(uint64_t src_offset, int pe, const char *call,
                                                    const tshmemi_device_state &st, T *scratch) {
  const uint64_t bits = get_value(src_offset, sizeof(T), pe, call, st);
  memcpy(scratch, &bits, sizeof(T));
  return reinterpret_cast<uint64_t>(scratch) - src_offset;
}

/// signal_op; returns the ticket.
TSHMEMI_DEVICE_COLD unsigned long long signal(uint64_t sig_offset, uint64_t value, int sig_op, int pe, const char *call,
                                              const tshmemi_device_state &st) {
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_SIGNAL;
  r.amo = static_cast<uint8_t>(sig_op);
  r.pe = pe;
  r.remote = checked_offset(sig_offset, st);
  r.value = value;
  return post(&r, call, st);
}

/// A barrier's arrival at a PE of another node: a SET signal, returned from once the proxy has taken it, so
/// every request this PE posted before it (an nbi put's source, say) has been read before the barrier ends.
TSHMEMI_DEVICE_COLD void arrive(uint64_t slot_offset, uint64_t epoch, int pe, const char *call,
                                const tshmemi_device_state &st) {
  wait_taken(signal(slot_offset, epoch, TSHMEM_SIGNAL_SET, pe, call, st), st);
}

/// put_signal of any scope: the data, then the signal after it (the target applies them in that order).
template <class Scope>
TSHMEMI_DEVICE_COLD void put_signal(uint64_t dest_offset, const void *src, size_t nbytes, uint64_t sig_offset,
                                    uint64_t value, int sig_op, int pe, const char *call,
                                    const tshmemi_device_state &st) {
  if (sig_op != TSHMEM_SIGNAL_SET && sig_op != TSHMEM_SIGNAL_ADD) trap_bad_operator(call, sig_op, st.my_pe);
  __threadfence();
  group<Scope>::sync();
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_PUT_SIGNAL;
  r.amo = static_cast<uint8_t>(sig_op);
  r.pe = pe;
  r.remote = checked_offset(dest_offset, st);
  r.bytes = nbytes;
  r.signal = checked_offset(sig_offset, st);
  r.value = value;
  if (stages<Scope>() && nbytes > 0 && staged_put(nbytes, st)) {
    put_through_staging<Scope>(r, src, call, st);
    return;
  }
  if (group<Scope>::rank() == 0) {
    r.local = reinterpret_cast<uint64_t>(src);
    wait_taken(post(&r, call, st), st);
  }
  group<Scope>::sync();
}

/// An atomic of `width` bytes; the old value for the fetching kinds (tshmemi_proxy_amo), else 0.
TSHMEMI_DEVICE_COLD uint64_t amo(uint64_t dest_offset, unsigned kind, unsigned width, uint64_t value, uint64_t compare,
                                 int pe, const char *call, const tshmemi_device_state &st) {
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_AMO;
  r.amo = static_cast<uint8_t>(kind);
  r.width = static_cast<uint8_t>(width);
  r.pe = pe;
  r.remote = checked_offset(dest_offset, st);
  r.value = value;
  r.compare = compare;
  if (!(kind & TSHMEMI_AMO_FETCH)) {
    post(&r, call, st);
    return 0;
  }
  return fetch(r, call, st);
}

}  // namespace proxy
}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_PROXY_CUH
