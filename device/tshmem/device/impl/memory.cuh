// Memory-model primitives at system scope (PTX ISA memory consistency model): the loads, stores and fences
// that every ordering promise of the device API is built from. Generic addresses throughout, so the same
// code serves local device memory and peer memory mapped over NVLink.
#ifndef TSHMEM_DEVICE_IMPL_MEMORY_CUH
#define TSHMEM_DEVICE_IMPL_MEMORY_CUH

#include "tshmem/device/defines.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// fence.acq_rel.sys: with a following relaxed strong write it forms a release pattern at system scope
/// (earlier writes of this thread, and writes it has observed, become visible before that write).
TSHMEMI_DEVICE void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

/// ld.acquire.sys: later reads of this thread see every write that happened before the write it observes.
/// T is a 4- or 8-byte integer.
template <class T>
TSHMEMI_DEVICE T load_acquire_sys(const T *addr) {
  if constexpr (sizeof(T) == 4) {
    uint32_t v;
    asm volatile("ld.acquire.sys.b32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
    return static_cast<T>(v);
  } else if constexpr (sizeof(T) == 8) {
    uint64_t v;
    asm volatile("ld.acquire.sys.b64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    return static_cast<T>(v);
  } else {
    static_assert(tshmem::dependent_false<T>, "load_acquire_sys: 4- or 8-byte integers only");
  }
}

/// ld.relaxed.sys: a strong (atomic) read with no ordering.
template <class T>
TSHMEMI_DEVICE T load_relaxed_sys(const T *addr) {
  if constexpr (sizeof(T) == 4) {
    uint32_t v;
    asm volatile("ld.relaxed.sys.b32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
    return static_cast<T>(v);
  } else if constexpr (sizeof(T) == 8) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.b64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    return static_cast<T>(v);
  } else {
    static_assert(tshmem::dependent_false<T>, "load_relaxed_sys: 4- or 8-byte integers only");
  }
}

/// st.relaxed.sys: a strong (atomic) write with no ordering.
template <class T>
TSHMEMI_DEVICE void store_relaxed_sys(T *addr, T value) {
  if constexpr (sizeof(T) == 4) {
    asm volatile("st.relaxed.sys.b32 [%0], %1;" ::"l"(addr), "r"(static_cast<uint32_t>(value)) : "memory");
  } else if constexpr (sizeof(T) == 8) {
    asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(addr), "l"(static_cast<uint64_t>(value)) : "memory");
  } else {
    static_assert(tshmem::dependent_false<T>, "store_relaxed_sys: 4- or 8-byte integers only");
  }
}

/// st.release.sys: every earlier write of this thread (and every write it has observed) is visible to a
/// thread that reads this value with an acquire.
template <class T>
TSHMEMI_DEVICE void store_release_sys(T *addr, T value) {
  if constexpr (sizeof(T) == 4) {
    asm volatile("st.release.sys.b32 [%0], %1;" ::"l"(addr), "r"(static_cast<uint32_t>(value)) : "memory");
  } else if constexpr (sizeof(T) == 8) {
    asm volatile("st.release.sys.b64 [%0], %1;" ::"l"(addr), "l"(static_cast<uint64_t>(value)) : "memory");
  } else {
    static_assert(tshmem::dependent_false<T>, "store_release_sys: 4- or 8-byte integers only");
  }
}

/// red.release.sys.add.u64: as store_release_sys, for an atomic add that returns nothing.
TSHMEMI_DEVICE void add_release_sys(uint64_t *addr, uint64_t value) {
  asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

/// The global nanosecond timer (for wait timeouts).
TSHMEMI_DEVICE uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_MEMORY_CUH
