// Bodies of tshmem/device/wait.cuh, and the spin loop that signal_wait_until and the barriers share.
#ifndef TSHMEM_DEVICE_IMPL_WAIT_CUH
#define TSHMEM_DEVICE_IMPL_WAIT_CUH

#include <type_traits>

#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/trap.cuh"
#include "tshmem/device/state.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

template <class T>
TSHMEMI_DEVICE bool compare(T found, int cmp, T value, const char *call, const tshmemi_device_state &st) {
  switch (cmp) {
    case TSHMEM_CMP_EQ: return found == value;
    case TSHMEM_CMP_NE: return found != value;
    case TSHMEM_CMP_GT: return found > value;
    case TSHMEM_CMP_GE: return found >= value;
    case TSHMEM_CMP_LT: return found < value;
    case TSHMEM_CMP_LE: return found <= value;
    default: trap_bad_operator(call, cmp, st.my_pe); return false;
  }
}

/// Spins until `*addr cmp value`; traps after st.wait_timeout_ns (0: never). Polls with relaxed loads (an
/// acquire load invalidates L1 on every poll), then confirms with one acquire load, which is what orders the
/// caller's later reads after the writes that preceded the value's release. A value seen relaxed that no
/// longer holds when re-read with acquire just resumes the spin.
template <class T>
TSHMEMI_DEVICE T spin_until(const T *addr, int cmp, T value, const char *call, const tshmemi_device_state &st) {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8), "wait: 32- or 64-bit integers only");
  T found = load_acquire_sys(addr);
  if (compare(found, cmp, value, call, st)) return found;
  const uint64_t timeout = st.wait_timeout_ns;
  const uint64_t start = timeout != 0 ? global_timer_ns() : 0;
  for (;;) {
    // Every poll is an acquire: the value that satisfies the wait is already the acquiring read (a relaxed
    // poll would need one more round trip to the memory system when it succeeds).
    found = load_acquire_sys(addr);
    if (compare(found, cmp, value, call, st)) return found;
    if (timeout != 0 && global_timer_ns() - start > timeout)
      trap_wait_timeout(call, addr, cmp, static_cast<unsigned long long>(value), static_cast<unsigned long long>(found),
                        static_cast<unsigned long long>(timeout), st.my_pe);
  }
}

}  // namespace tshmemi

namespace tshmem {

TSHMEMI_DEVICE uint64_t wait_timeout_ns(const tshmemi_device_state &st) { return st.wait_timeout_ns; }

template <class T>
TSHMEMI_DEVICE T wait_until(const T *ivar, int cmp, nondeduced_t<T> value, const tshmemi_device_state &st) {
  return tshmemi::spin_until(ivar, cmp, value, "tshmem_wait_until", st);
}

template <class T>
TSHMEMI_DEVICE bool test(const T *ivar, int cmp, nondeduced_t<T> value, const tshmemi_device_state &st) {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8), "test: 32- or 64-bit integers only");
  return tshmemi::compare(tshmemi::load_acquire_sys(ivar), cmp, value, "tshmem_test", st);
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_WAIT_CUH
