/*
 * Who am I, how many are we, and where is a peer's copy: my_pe, n_pes, ptr.
 * Any thread may call these; they read the state and touch no memory.
 */
#ifndef TSHMEM_DEVICE_PE_CUH
#define TSHMEM_DEVICE_PE_CUH

#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {

/// This PE's number in [0, n_pes); 0 before init (the state is zeroed then).
TSHMEMI_DEVICE int my_pe(const tshmemi_device_state &st = tshmemi::state()) { return st.my_pe; }

/// The number of PEs; 0 before init.
TSHMEMI_DEVICE int n_pes(const tshmemi_device_state &st = tshmemi::state()) { return st.n_pes; }

/// The address at which this thread can load and store `pe`'s copy of the symmetric object `dest`, or
/// NULL when `pe` is out of range, has no load/store path (another node), or `dest` is not in the heap.
/// Never traps. ptr(p, my_pe()) == p for every heap address p.
template <class T>
TSHMEMI_DEVICE T *ptr(T *dest, int pe, const tshmemi_device_state &st = tshmemi::state()) {
  return tshmemi::translate_or_null(dest, pe, st);
}

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_PE_CUH
