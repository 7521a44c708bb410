// The byte mover behind every put and get: any size, any alignment, shared by the threads of a group.
// When source and destination have the same misalignment modulo 16 (8, 4) bytes the body moves 16 (8, 4)
// bytes per access after a byte-wise head; a byte-wise tail finishes. Loads are batched four at a time per
// thread so that remote (NVLink) latency overlaps.
#ifndef TSHMEM_DEVICE_IMPL_COPY_CUH
#define TSHMEM_DEVICE_IMPL_COPY_CUH

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

/// Copies `n` bytes from `src` to `dst` (either may be a peer's memory), picking the widest access both
/// sides allow. Called by every thread of the group of Scope with the same arguments.
template <class Scope>
TSHMEMI_DEVICE void copy_bytes(void *dst, const void *src, size_t n) {
  using G = group<Scope>;
  char *d = static_cast<char *>(dst);
  const char *s = static_cast<const char *>(src);
  const uintptr_t skew = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  if ((skew & 15) == 0 && n >= 16) {
    copy_units<uint4, G>(d, s, n);
  } else if ((skew & 7) == 0 && n >= 8) {
    copy_units<uint2, G>(d, s, n);
  } else if ((skew & 3) == 0 && n >= 4) {
    copy_units<uint32_t, G>(d, s, n);
  } else {
    copy_units<unsigned char, G>(d, s, n);
  }
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_COPY_CUH
