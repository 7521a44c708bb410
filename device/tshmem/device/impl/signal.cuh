// Bodies of tshmem/device/signal.cuh.
#ifndef TSHMEM_DEVICE_IMPL_SIGNAL_CUH
#define TSHMEM_DEVICE_IMPL_SIGNAL_CUH

#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/rma.cuh"
#include "tshmem/device/impl/transfer.cuh"
#include "tshmem/device/wait.cuh"  // the declarations with their default arguments, then the bodies

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

template <class Scope>
TSHMEMI_DEVICE void put_signal_bytes(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                     int sig_op, int pe, const char *call, const tshmemi_device_state &st) {
  // Both addresses are translated (and the PE checked) before anything is written.
  const uint64_t peer = peer_slot(pe, call, st);
  const uint64_t offset = heap_offset_of(dest, st), sig_offset = heap_offset_of(sig_addr, st);
  transfer::put_signal<Scope>(peer, offset, src, nbytes, sig_offset, signal, sig_op, pe, call, st);
}

}  // namespace tshmemi

namespace tshmem {

template <class Scope, class T>
TSHMEMI_DEVICE void put_signal(T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op,
                               int pe, const tshmemi_device_state &st) {
  tshmemi::put_signal_bytes<Scope>(
      dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
      tshmemi::scoped_name<Scope>("tshmem_put_signal", "tshmem_put_signal_warp", "tshmem_put_signal_block"), st);
}

template <class Scope, class T>
TSHMEMI_DEVICE void put_signal_nbi(T *dest, const T *src, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                   int sig_op, int pe, const tshmemi_device_state &st) {
  tshmemi::put_signal_bytes<Scope>(
      dest, src, nelems * sizeof(T), sig_addr, signal, sig_op, pe,
      tshmemi::scoped_name<Scope>("tshmem_put_signal_nbi", "tshmem_put_signal_nbi_warp", "tshmem_put_signal_nbi_block"),
      st);
}

template <class Scope>
TSHMEMI_DEVICE void putmem_signal(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                  int sig_op, int pe, const tshmemi_device_state &st) {
  tshmemi::put_signal_bytes<Scope>(
      dest, src, nbytes, sig_addr, signal, sig_op, pe,
      tshmemi::scoped_name<Scope>("tshmem_putmem_signal", "tshmem_putmem_signal_warp", "tshmem_putmem_signal_block"),
      st);
}

template <class Scope>
TSHMEMI_DEVICE void putmem_signal_nbi(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                      int sig_op, int pe, const tshmemi_device_state &st) {
  tshmemi::put_signal_bytes<Scope>(
      dest, src, nbytes, sig_addr, signal, sig_op, pe,
      tshmemi::scoped_name<Scope>("tshmem_putmem_signal_nbi", "tshmem_putmem_signal_nbi_warp",
                                  "tshmem_putmem_signal_nbi_block"),
      st);
}

TSHMEMI_DEVICE void signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, const tshmemi_device_state &st) {
  const uint64_t peer = tshmemi::peer_slot_lane(pe, "tshmem_signal_op", st);
  tshmemi::transfer::signal(peer, tshmemi::heap_offset_of(sig_addr, st), signal, sig_op, pe, "tshmem_signal_op", st);
}

TSHMEMI_DEVICE uint64_t signal_wait_until(const uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                          const tshmemi_device_state &st) {
  return tshmemi::spin_until(sig_addr, cmp, cmp_value, "tshmem_signal_wait_until", st);
}

TSHMEMI_DEVICE uint64_t signal_fetch(const uint64_t *sig_addr) { return tshmemi::load_acquire_sys(sig_addr); }

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_SIGNAL_CUH
