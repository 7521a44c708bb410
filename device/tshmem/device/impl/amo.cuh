// Bodies of tshmem/device/amo.cuh: one dispatcher over the operation, `if constexpr` on the type.
#ifndef TSHMEM_DEVICE_IMPL_AMO_CUH
#define TSHMEM_DEVICE_IMPL_AMO_CUH

#include <type_traits>

#include "tshmem/device/impl/transfer.cuh"
#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

using transfer::amo_op;

/// Translates `dest` for `pe` (checked) and performs `Op` with system scope; returns the previous value
/// (`set` returns `value`). A PE of another node: the same atomic through the proxy, done by its GPU; with
/// kFetch false (the caller drops the old value) it is posted without waiting for it.
template <amo_op Op, class T, bool kFetch = true>
TSHMEMI_DEVICE T amo(T *dest, T value, T cond, int pe, const char *call, const tshmemi_device_state &st) {
  constexpr bool kInteger = std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8);
  constexpr bool kFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;
  constexpr bool kExtended = Op == amo_op::fetch || Op == amo_op::set || Op == amo_op::swap;
  static_assert(kInteger || (kFloat && kExtended),
                "tshmem atomics: 32/64-bit integers (fetch, set, swap also on float and double)");
  const uint64_t peer = peer_slot_lane(pe, call, st);
  const uint64_t offset = heap_offset_of(dest, st);
  return transfer::atomic<Op, kFetch>(peer, offset, value, cond, pe, call, st);
}

}  // namespace tshmemi

namespace tshmem {

template <class T>
TSHMEMI_DEVICE T atomic_fetch(const T *source, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch>(const_cast<T *>(source), T(), T(), pe, "tshmem_atomic_fetch", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_set(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::set>(dest, value, T(), pe, "tshmem_atomic_set", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_swap(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::swap>(dest, value, T(), pe, "tshmem_atomic_swap", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_compare_swap(T *dest, nondeduced_t<T> cond, nondeduced_t<T> value, int pe,
                                     const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::compare_swap>(dest, value, cond, pe, "tshmem_atomic_compare_swap", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_fetch_add(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch_add>(dest, value, T(), pe, "tshmem_atomic_fetch_add", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_add(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::fetch_add, T, false>(dest, value, T(), pe, "tshmem_atomic_add", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_fetch_inc(T *dest, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch_add>(dest, T(1), T(), pe, "tshmem_atomic_fetch_inc", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_inc(T *dest, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::fetch_add, T, false>(dest, T(1), T(), pe, "tshmem_atomic_inc", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_fetch_and(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch_and>(dest, value, T(), pe, "tshmem_atomic_fetch_and", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_and(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::fetch_and, T, false>(dest, value, T(), pe, "tshmem_atomic_and", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_fetch_or(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch_or>(dest, value, T(), pe, "tshmem_atomic_fetch_or", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_or(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::fetch_or, T, false>(dest, value, T(), pe, "tshmem_atomic_or", st);
}
template <class T>
TSHMEMI_DEVICE T atomic_fetch_xor(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  return tshmemi::amo<tshmemi::amo_op::fetch_xor>(dest, value, T(), pe, "tshmem_atomic_fetch_xor", st);
}
template <class T>
TSHMEMI_DEVICE void atomic_xor(T *dest, nondeduced_t<T> value, int pe, const tshmemi_device_state &st) {
  tshmemi::amo<tshmemi::amo_op::fetch_xor, T, false>(dest, value, T(), pe, "tshmem_atomic_xor", st);
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_AMO_CUH
