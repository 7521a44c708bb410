// The byte mover behind every put and get: any size, any alignment, shared by the threads of a group.
// When source and destination have the same misalignment modulo 16 (8, 4) bytes the body moves 16 (8, 4)
// bytes per access after a byte-wise head; a byte-wise tail finishes. Loads are batched four at a time per
// thread so that remote (NVLink) latency overlaps.
//
// A lone thread (thread scope) copies with loops the compiler may not unroll: unrolled, its copy took a kernel that
// calls getmem in a loop to 94-120 registers, past the 64 a 1,024-thread block can give each thread, so such a
// kernel would not launch. Unrolling bought it nothing: dst and src may alias, so no load moves above an earlier
// store and the four loads of a batch stay the only ones in flight either way.
#ifndef TSHMEM_DEVICE_IMPL_COPY_CUH
#define TSHMEM_DEVICE_IMPL_COPY_CUH

#include <type_traits>

#include "tshmem/device/impl/group.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// Copies `n` bytes; `dst` and `src` share their misalignment modulo sizeof(U). Called by every thread of
/// the group G; no synchronisation inside.
template <class U, class G>
TSHMEMI_DEVICE void copy_units(char *dst, const char *src, size_t n) {
  const size_t rank = G::rank(), stride = G::size();
  size_t head = (sizeof(U) - (reinterpret_cast<uintptr_t>(dst) & (sizeof(U) - 1))) & (sizeof(U) - 1);
  if (head > n) head = n;
  for (size_t i = rank; i < head; i += stride) dst[i] = src[i];
  dst += head;
  src += head;
  n -= head;
  const size_t units = n / sizeof(U);
  U *du = reinterpret_cast<U *>(dst);
  const U *su = reinterpret_cast<const U *>(src);
  size_t i = rank;
  for (; i + 3 * stride < units; i += 4 * stride) {
    const U a = su[i], b = su[i + stride], c = su[i + 2 * stride], d = su[i + 3 * stride];
    du[i] = a;
    du[i + stride] = b;
    du[i + 2 * stride] = c;
    du[i + 3 * stride] = d;
  }
  for (; i < units; i += stride) du[i] = su[i];
  for (size_t j = units * sizeof(U) + rank; j < n; j += stride) dst[j] = src[j];
}

/// copy_units for a lone thread: the same accesses in the same order, in loops kept rolled (see the top of the file).
template <class U>
TSHMEMI_DEVICE void copy_units_one_thread(char *dst, const char *src, size_t n) {
  size_t head = (sizeof(U) - (reinterpret_cast<uintptr_t>(dst) & (sizeof(U) - 1))) & (sizeof(U) - 1);
  if (head > n) head = n;
#pragma unroll 1
  for (size_t i = 0; i < head; ++i) dst[i] = src[i];
  dst += head;
  src += head;
  n -= head;
  const size_t units = n / sizeof(U);
  U *du = reinterpret_cast<U *>(dst);
  const U *su = reinterpret_cast<const U *>(src);
  size_t i = 0;
#pragma unroll 1
  for (; i + 3 < units; i += 4) {
    const U a = su[i], b = su[i + 1], c = su[i + 2], d = su[i + 3];
    du[i] = a;
    du[i + 1] = b;
    du[i + 2] = c;
    du[i + 3] = d;
  }
#pragma unroll 1
  for (; i < units; ++i) du[i] = su[i];
#pragma unroll 1
  for (size_t j = units * sizeof(U); j < n; ++j) dst[j] = src[j];
}

/// The copy of `n` bytes in units of U by the group G.
template <class U, class G>
TSHMEMI_DEVICE void copy_units_of(char *dst, const char *src, size_t n) {
  if constexpr (std::is_same<G, group<tshmem::thread_scope>>::value) {
    copy_units_one_thread<U>(dst, src, n);
  } else {
    copy_units<U, G>(dst, src, n);
  }
}

/// Copies `n` bytes from `src` to `dst` (either may be a peer's memory), picking the widest access both
/// sides allow. Called by every thread of the group of Scope with the same arguments.
template <class Scope>
TSHMEMI_DEVICE void copy_bytes(void *dst, const void *src, size_t n) {
  using G = group<Scope>;
  char *d = static_cast<char *>(dst);
  const char *s = static_cast<const char *>(src);
  const uintptr_t skew = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  if ((skew & 15) == 0 && n >= 16) {
    copy_units_of<uint4, G>(d, s, n);
  } else if ((skew & 7) == 0 && n >= 8) {
    copy_units_of<uint2, G>(d, s, n);
  } else if ((skew & 3) == 0 && n >= 4) {
    copy_units_of<uint32_t, G>(d, s, n);
  } else {
    copy_units_of<unsigned char, G>(d, s, n);
  }
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_COPY_CUH
