// Bodies of tshmem/device/remote_ptr.cuh. The only device code that reads heap_base.
#ifndef TSHMEM_DEVICE_IMPL_REMOTE_PTR_CUH
#define TSHMEM_DEVICE_IMPL_REMOTE_PTR_CUH

#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/state.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// The heap offset of symmetric `local`: how a request names it to the proxy of another node, and what
/// at_heap_offset adds to a peer slot. An operation computes it before its peer-slot test and hands it to both
/// paths: were the off-node call to take the pointer, the compiler would sink the heap_base load into the
/// on-node branch, after the slot's load, where it costs a dependent constant load per operation.
TSHMEMI_DEVICE uint64_t heap_offset_of(const void *local, const tshmemi_device_state &st) {
  return reinterpret_cast<uint64_t>(local) - st.heap_base;
}

/// The symmetric object at heap `offset` (heap_offset_of) on the PE whose nonzero slot is `peer`.
template <class T>
TSHMEMI_DEVICE T *at_heap_offset(uint64_t peer, uint64_t offset) {
  return reinterpret_cast<T *>(peer + offset);
}

namespace detail {

/// `local` on the PE whose nonzero slot is `peer`: the formula, in the two steps above.
template <class T>
TSHMEMI_DEVICE T *rebase(T *local, uint64_t peer, const tshmemi_device_state &st) {
  return at_heap_offset<T>(peer, heap_offset_of(local, st));
}

TSHMEMI_DEVICE void check_pe(int pe, const char *call, const tshmemi_device_state &st) {
#if TSHMEM_DEVICE_PE_CHECK
  // One unsigned compare covers pe < 0 too.
  if (__builtin_expect(static_cast<unsigned>(pe) >= static_cast<unsigned>(st.n_pes), 0))
    trap_pe_out_of_range(call, pe, st.n_pes, st.my_pe);
#else
  (void)pe, (void)call, (void)st;
#endif
}

TSHMEMI_DEVICE void check_reachable(uint64_t peer, int pe, const char *call, const tshmemi_device_state &st) {
  if (__builtin_expect(peer == 0, 0)) trap_pe_unreachable(call, pe, st.my_pe);
}

}  // namespace detail

template <class T>
TSHMEMI_DEVICE T *remote_ptr(T *local, int pe, const char *call, const tshmemi_device_state &st) {
  detail::check_pe(pe, call, st);
  const uint64_t peer = st.peer_base[pe];
  detail::check_reachable(peer, pe, call, st);
  return detail::rebase(local, peer, st);
}

template <class T>
TSHMEMI_DEVICE T *remote_ptr_lane(T *local, int pe, const char *call, const tshmemi_device_state &st) {
  detail::check_pe(pe, call, st);
  // The mirror is filled with the table; a state without one (never published) falls back to the table.
  const uint64_t peer = st.peer_base_global != nullptr ? __ldg(st.peer_base_global + pe) : st.peer_base[pe];
  detail::check_reachable(peer, pe, call, st);
  return detail::rebase(local, peer, st);
}

/// The peer slot of `pe` (range checked): where this PE sees `pe`'s heap, 0 for a PE of another node, which
/// the caller reaches through the proxy channel (impl/proxy.cuh) — the same loads and compare as remote_ptr.
TSHMEMI_DEVICE uint64_t peer_slot(int pe, const char *call, const tshmemi_device_state &st) {
  detail::check_pe(pe, call, st);
  return st.peer_base[pe];
}

/// As peer_slot, for calls where lanes of one warp may name different PEs (see remote_ptr_lane).
TSHMEMI_DEVICE uint64_t peer_slot_lane(int pe, const char *call, const tshmemi_device_state &st) {
  detail::check_pe(pe, call, st);
  return st.peer_base_global != nullptr ? __ldg(st.peer_base_global + pe) : st.peer_base[pe];
}

template <class T>
TSHMEMI_DEVICE T *translate_or_null(T *local, int pe, const tshmemi_device_state &st) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(st.n_pes)) return nullptr;
  const uint64_t span = st.symmetric_span != 0 ? st.symmetric_span : st.heap_size;  // + registered buffers
  if (heap_offset_of(local, st) >= span) return nullptr;
  const uint64_t peer = st.peer_base[pe];
  return peer == 0 ? nullptr : detail::rebase(local, peer, st);
}

TSHMEMI_DEVICE char *own_heap_base(const tshmemi_device_state &st) {
  return reinterpret_cast<char *>(st.peer_base[st.my_pe]);
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_REMOTE_PTR_CUH
