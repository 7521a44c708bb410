// Bodies of tshmem/device/rma.cuh.
#ifndef TSHMEM_DEVICE_IMPL_RMA_CUH
#define TSHMEM_DEVICE_IMPL_RMA_CUH

#include <type_traits>

#include "tshmem/device/impl/transfer.cuh"
#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// The call name for messages: `thread`, `warp` or `block` by scope.
template <class Scope>
TSHMEMI_DEVICE constexpr const char *scoped_name(const char *thread, const char *warp, const char *block) {
  if constexpr (std::is_same_v<Scope, tshmem::thread_scope>) {
    return thread;
  } else if constexpr (std::is_same_v<Scope, tshmem::warp_scope>) {
    return warp;
  } else if constexpr (std::is_same_v<Scope, tshmem::block_scope>) {
    return block;
  } else {
    static_assert(tshmem::dependent_false<Scope>, "scope must be thread_scope, warp_scope or block_scope");
    return nullptr;
  }
}

template <class Scope, bool kBlocking>
TSHMEMI_DEVICE void put_bytes(void *dest, const void *src, size_t nbytes, int pe, const char *call,
                              const tshmemi_device_state &st) {
  const uint64_t peer = peer_slot(pe, call, st);
  const uint64_t offset = heap_offset_of(dest, st);
  transfer::put<Scope, kBlocking>(peer, offset, src, nbytes, pe, call, st);
}

template <class Scope, bool kBlocking>
TSHMEMI_DEVICE void get_bytes(void *dest, const void *src, size_t nbytes, int pe, const char *call,
                              const tshmemi_device_state &st) {
  const uint64_t peer = peer_slot(pe, call, st);
  const uint64_t offset = heap_offset_of(src, st);
  transfer::get<Scope, kBlocking>(dest, peer, offset, nbytes, pe, call, st);
}

}  // namespace tshmemi

namespace tshmem {

template <class T>
TSHMEMI_DEVICE void p(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  static_assert(std::is_arithmetic_v<T> || std::is_pointer_v<T>, "p: standard (arithmetic) types");
  uint64_t peer = tshmemi::peer_slot_lane(pe, "tshmem_p", st);
  const uint64_t offset = tshmemi::heap_offset_of(dest, st);
  T scratch;  // another node: the proxy carries the value, the store below lands here
  peer = tshmemi::transfer::p_slot<T>(peer, offset, value, pe, "tshmem_p", st, &scratch);
  *tshmemi::at_heap_offset<T>(peer, offset) = value;
}

template <class T>
TSHMEMI_DEVICE T g(const T *src, int pe, const tshmemi_device_state &st) {
  static_assert(std::is_arithmetic_v<T> || std::is_pointer_v<T>, "g: standard (arithmetic) types");
  uint64_t peer = tshmemi::peer_slot_lane(pe, "tshmem_g", st);
  const uint64_t offset = tshmemi::heap_offset_of(src, st);
  T scratch;  // another node: the proxy's value, which the load below reads
  peer = tshmemi::transfer::g_slot<T>(peer, offset, pe, "tshmem_g", st, &scratch);
  return *tshmemi::at_heap_offset<const volatile T>(peer, offset);
}

template <class Scope, class T>
TSHMEMI_DEVICE void put(T *dest, const T *src, size_t nelems, int pe, const tshmemi_device_state &st) {
  tshmemi::put_bytes<Scope, true>(dest, src, nelems * sizeof(T), pe,
                                  tshmemi::scoped_name<Scope>("tshmem_put", "tshmem_put_warp", "tshmem_put_block"), st);
}

template <class Scope, class T>
TSHMEMI_DEVICE void put_nbi(T *dest, const T *src, size_t nelems, int pe, const tshmemi_device_state &st) {
  tshmemi::put_bytes<Scope, false>(
      dest, src, nelems * sizeof(T), pe,
      tshmemi::scoped_name<Scope>("tshmem_put_nbi", "tshmem_put_nbi_warp", "tshmem_put_nbi_block"), st);
}

template <class Scope, class T>
TSHMEMI_DEVICE void get(T *dest, const T *src, size_t nelems, int pe, const tshmemi_device_state &st) {
  tshmemi::get_bytes<Scope, true>(dest, src, nelems * sizeof(T), pe,
                                  tshmemi::scoped_name<Scope>("tshmem_get", "tshmem_get_warp", "tshmem_get_block"), st);
}

template <class Scope, class T>
TSHMEMI_DEVICE void get_nbi(T *dest, const T *src, size_t nelems, int pe, const tshmemi_device_state &st) {
  tshmemi::get_bytes<Scope, false>(
      dest, src, nelems * sizeof(T), pe,
      tshmemi::scoped_name<Scope>("tshmem_get_nbi", "tshmem_get_nbi_warp", "tshmem_get_nbi_block"), st);
}

template <class Scope>
TSHMEMI_DEVICE void putmem(void *dest, const void *src, size_t nbytes, int pe, const tshmemi_device_state &st) {
  tshmemi::put_bytes<Scope, true>(
      dest, src, nbytes, pe, tshmemi::scoped_name<Scope>("tshmem_putmem", "tshmem_putmem_warp", "tshmem_putmem_block"),
      st);
}

template <class Scope>
TSHMEMI_DEVICE void putmem_nbi(void *dest, const void *src, size_t nbytes, int pe, const tshmemi_device_state &st) {
  tshmemi::put_bytes<Scope, false>(
      dest, src, nbytes, pe,
      tshmemi::scoped_name<Scope>("tshmem_putmem_nbi", "tshmem_putmem_nbi_warp", "tshmem_putmem_nbi_block"), st);
}

template <class Scope>
TSHMEMI_DEVICE void getmem(void *dest, const void *src, size_t nbytes, int pe, const tshmemi_device_state &st) {
  tshmemi::get_bytes<Scope, true>(
      dest, src, nbytes, pe, tshmemi::scoped_name<Scope>("tshmem_getmem", "tshmem_getmem_warp", "tshmem_getmem_block"),
      st);
}

template <class Scope>
TSHMEMI_DEVICE void getmem_nbi(void *dest, const void *src, size_t nbytes, int pe, const tshmemi_device_state &st) {
  tshmemi::get_bytes<Scope, false>(
      dest, src, nbytes, pe,
      tshmemi::scoped_name<Scope>("tshmem_getmem_nbi", "tshmem_getmem_nbi_warp", "tshmem_getmem_nbi_block"), st);
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_RMA_CUH
