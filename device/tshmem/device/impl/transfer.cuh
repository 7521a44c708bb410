// The one place that decides how a PE is reached. A device operation first translates the PE and the address
// (peer_slot / peer_slot_lane, heap_offset_of: remote_ptr.cuh), then calls the primitive here, which either loads
// and stores through the peer-table slot (a PE of this node) or posts to the off-node proxy (a PE of another node:
// slot 0). No other device file includes proxy.cuh; another transport (GPUDirect, say) changes this file only.
//
// The shapes keep the on-node code what it was: the off-node branch is a call into __noinline__ code, expected
// not taken, and p and g return the slot the caller then stores to or loads from (proxy.cuh says why).
#ifndef TSHMEM_DEVICE_IMPL_TRANSFER_CUH
#define TSHMEM_DEVICE_IMPL_TRANSFER_CUH

#include <cstring>
#include <type_traits>

#include "tshmem/device/impl/copy.cuh"
#include "tshmem/device/impl/group.cuh"
#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/proxy.cuh"
#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {
namespace transfer {

/// Whether the PE of peer-table slot `peer` is reached through the off-node proxy (it has no load/store path), as
/// the condition of the branch itself: the hint attaches to the branch that tests it, which a function returning
/// the bool would lose (and with it the on-node code's layout).
#define TSHMEMI_OFF_NODE(peer) __builtin_expect((peer) == 0, 0)

/// nbytes from `src` to heap offset `offset` of the PE of slot `peer`; kBlocking: `src` may be reused on return.
template <class Scope, bool kBlocking>
TSHMEMI_DEVICE void put(uint64_t peer, uint64_t offset, const void *src, size_t nbytes, int pe, const char *call,
                        const tshmemi_device_state &st) {
  if (TSHMEMI_OFF_NODE(peer)) return proxy::put<Scope>(offset, src, nbytes, pe, kBlocking, call, st);
  copy_bytes<Scope>(at_heap_offset<void>(peer, offset), src, nbytes);
  if constexpr (kBlocking) group<Scope>::sync();
}

/// nbytes at heap offset `offset` of the PE of slot `peer` into `dest`.
template <class Scope, bool kBlocking>
TSHMEMI_DEVICE void get(void *dest, uint64_t peer, uint64_t offset, size_t nbytes, int pe, const char *call,
                        const tshmemi_device_state &st) {
  if (TSHMEMI_OFF_NODE(peer)) return proxy::get<Scope>(dest, offset, nbytes, pe, call, st);
  copy_bytes<Scope>(dest, at_heap_offset<const void>(peer, offset), nbytes);
  if constexpr (kBlocking) group<Scope>::sync();
}

/// p: the slot the caller's store of `value` at `offset` goes through. Another node: the proxy carries the value
/// and the store lands in `scratch`.
template <class T>
TSHMEMI_DEVICE uint64_t p_slot(uint64_t peer, uint64_t offset, T value, int pe, const char *call,
                               const tshmemi_device_state &st, T *scratch) {
  if (TSHMEMI_OFF_NODE(peer)) peer = proxy::put_value_then_scratch<T>(offset, value, pe, call, st, scratch);
  return peer;
}

/// g: the slot the caller's load at `offset` goes through. Another node: the proxy's value, put in `scratch`.
template <class T>
TSHMEMI_DEVICE uint64_t g_slot(uint64_t peer, uint64_t offset, int pe, const char *call, const tshmemi_device_state &st,
                               T *scratch) {
  if (TSHMEMI_OFF_NODE(peer)) peer = proxy::get_value_into_scratch<T>(offset, pe, call, st, scratch);
  return peer;
}

/// An element of type T at `offset` of the PE of slot `peer`: a plain load on this node, a round trip off it.
template <class T>
TSHMEMI_DEVICE T load(uint64_t peer, uint64_t offset, int pe, const char *call, const tshmemi_device_state &st) {
  if (__builtin_expect(peer != 0, 1)) return *at_heap_offset<const T>(peer, offset);
  const uint64_t bits = proxy::get_value(offset, sizeof(T), pe, call, st);
  T x;
  memcpy(&x, &bits, sizeof(T));
  return x;
}

/// The signal on an already translated address: one system-scope release. Release is cumulative, so the writes
/// of the whole group (ordered before this thread by the group barrier) are visible first; a separate fence
/// before it would be a second MEMBAR.SYS on every signal for nothing.
TSHMEMI_DEVICE void signal_release(uint64_t *remote_sig, uint64_t signal, int sig_op, const char *call,
                                   const tshmemi_device_state &st) {
  if (sig_op == TSHMEM_SIGNAL_SET) {
    store_release_sys(remote_sig, signal);
  } else if (sig_op == TSHMEM_SIGNAL_ADD) {
    add_release_sys(remote_sig, signal);
  } else {
    trap_bad_operator(call, sig_op, st.my_pe);
  }
}

/// A signal operation on the word at `offset` of the PE of slot `peer`.
TSHMEMI_DEVICE void signal(uint64_t peer, uint64_t offset, uint64_t value, int sig_op, int pe, const char *call,
                           const tshmemi_device_state &st) {
  if (TSHMEMI_OFF_NODE(peer)) {
    if (sig_op != TSHMEM_SIGNAL_SET && sig_op != TSHMEM_SIGNAL_ADD) trap_bad_operator(call, sig_op, st.my_pe);
    proxy::signal(offset, value, sig_op, pe, call, st);
    return;
  }
  signal_release(at_heap_offset<uint64_t>(peer, offset), value, sig_op, call, st);
}

/// put with signal: the data, then the signal after it.
template <class Scope>
TSHMEMI_DEVICE void put_signal(uint64_t peer, uint64_t offset, const void *src, size_t nbytes, uint64_t sig_offset,
                               uint64_t signal, int sig_op, int pe, const char *call, const tshmemi_device_state &st) {
  if (TSHMEMI_OFF_NODE(peer))
    return proxy::put_signal<Scope>(offset, src, nbytes, sig_offset, signal, sig_op, pe, call, st);
  uint64_t *remote_sig = at_heap_offset<uint64_t>(peer, sig_offset);
  void *remote = at_heap_offset<void>(peer, offset);
  copy_bytes<Scope>(remote, src, nbytes);
  group<Scope>::sync();
  if (group<Scope>::rank() == 0) signal_release(remote_sig, signal, sig_op, call, st);
  group<Scope>::sync();
}

/// A barrier's arrival: `epoch` into the word at `slot_offset` of the PE of slot `peer`, after everything this
/// thread wrote before (a release on this node; off it, after every request posted before, at the target).
TSHMEMI_DEVICE void arrive(uint64_t peer, uint64_t slot_offset, uint64_t epoch, int pe, const char *call,
                           const tshmemi_device_state &st) {
  if (TSHMEMI_OFF_NODE(peer)) return proxy::arrive(slot_offset, epoch, pe, call, st);
  store_release_sys(at_heap_offset<uint64_t>(peer, slot_offset), epoch);
}

enum class amo_op { fetch, set, swap, compare_swap, fetch_add, fetch_and, fetch_or, fetch_xor };

/// The proxy's kind for `Op` (proxy_types.h).
template <amo_op Op>
TSHMEMI_DEVICE constexpr unsigned proxy_amo_kind() {
  switch (Op) {
    case amo_op::fetch: return TSHMEMI_AMO_FETCH;
    case amo_op::set: return TSHMEMI_AMO_SET;
    case amo_op::swap: return TSHMEMI_AMO_SWAP;
    case amo_op::compare_swap: return TSHMEMI_AMO_CSWAP;
    case amo_op::fetch_add: return TSHMEMI_AMO_FETCH_ADD;
    case amo_op::fetch_and: return TSHMEMI_AMO_FETCH_AND;
    case amo_op::fetch_or: return TSHMEMI_AMO_FETCH_OR;
    case amo_op::fetch_xor: return TSHMEMI_AMO_FETCH_XOR;
  }
  return 0;
}

/// The unsigned word the hardware operates on.
template <class T>
using amo_word_t = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;

template <class T>
TSHMEMI_DEVICE amo_word_t<T> to_word(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return __float_as_uint(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<unsigned long long>(__double_as_longlong(v));
  } else {
    return static_cast<amo_word_t<T>>(v);
  }
}

template <class T>
TSHMEMI_DEVICE T from_word(amo_word_t<T> w) {
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(w);
  } else if constexpr (std::is_same_v<T, double>) {
    return __longlong_as_double(static_cast<long long>(w));
  } else {
    return static_cast<T>(w);
  }
}

/// `Op` with system scope on the T (a 4- or 8-byte integer, float or double) at `offset` of the PE of slot `peer`;
/// returns the previous value (`set`: `value`). Off this node the same atomic goes through the proxy and is done
/// by that PE's GPU; with kFetch false (the caller drops the old value) it is posted without waiting for it.
template <amo_op Op, bool kFetch, class T>
TSHMEMI_DEVICE T atomic(uint64_t peer, uint64_t offset, T value, T cond, int pe, const char *call,
                        const tshmemi_device_state &st) {
  using W = amo_word_t<T>;
  if (TSHMEMI_OFF_NODE(peer)) {
    constexpr unsigned kind = kFetch ? proxy_amo_kind<Op>() : (proxy_amo_kind<Op>() & ~unsigned{TSHMEMI_AMO_FETCH});
    const uint64_t old = proxy::amo(offset, kind, sizeof(W), to_word(value), to_word(cond), pe, call, st);
    return Op == amo_op::set ? value : from_word<T>(static_cast<W>(old));
  }
  W *word = at_heap_offset<W>(peer, offset);
  const W v = to_word(value);
  if constexpr (Op == amo_op::fetch) {
    return from_word<T>(load_relaxed_sys(word));
  } else if constexpr (Op == amo_op::set) {
    store_relaxed_sys(word, v);
    return value;
  } else if constexpr (Op == amo_op::swap) {
    return from_word<T>(atomicExch_system(word, v));
  } else if constexpr (Op == amo_op::compare_swap) {
    return from_word<T>(atomicCAS_system(word, to_word(cond), v));
  } else if constexpr (Op == amo_op::fetch_add) {
    return from_word<T>(atomicAdd_system(word, v));
  } else if constexpr (Op == amo_op::fetch_and) {
    return from_word<T>(atomicAnd_system(word, v));
  } else if constexpr (Op == amo_op::fetch_or) {
    return from_word<T>(atomicOr_system(word, v));
  } else if constexpr (Op == amo_op::fetch_xor) {
    return from_word<T>(atomicXor_system(word, v));
  } else {
    static_assert(tshmem::dependent_false<T>, "unknown atomic operation");
    return value;
  }
}

/// Every request of this PE is complete at its target: a system fence, and in a job that spans nodes the proxy's
/// quiet too.
TSHMEMI_DEVICE void quiet(const tshmemi_device_state &st) {
  __threadfence_system();
  if (__builtin_expect(st.proxy_channel != nullptr, 0)) proxy::quiet(st);
}

}  // namespace transfer
}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_TRANSFER_CUH
