// Bodies of tshmem/device/signal.cuh.
#ifndef TSHMEM_DEVICE_IMPL_SIGNAL_CUH
#define TSHMEM_DEVICE_IMPL_SIGNAL_CUH

#include "tshmem/device/impl/memory.cuh"
#include "tshmem/device/impl/rma.cuh"
#include "tshmem/device/impl/wait.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// The signal on an already translated address: one system-scope release. Release is cumulative, so the
/// writes of the whole group (ordered before this thread by the group barrier) are visible first; a separate
/// fence before it would be a second MEMBAR.SYS on every signal for nothing.
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

template <class Scope>
TSHMEMI_DEVICE void put_signal_bytes(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                                     int sig_op, int pe, const char *call, const tshmemi_device_state &st) {
  // Both addresses are translated (and the PE checked) before anything is written.
  const uint64_t peer = peer_slot(pe, call, st);
  const uint64_t offset = heap_offset_of(dest, st), sig_offset = heap_offset_of(sig_addr, st);
  if (__builtin_expect(peer == 0, 0))
    return proxy::put_signal<Scope>(offset, src, nbytes, sig_offset, signal, sig_op, pe, call, st);
  uint64_t *remote_sig = at_heap_offset<uint64_t>(peer, sig_offset);
  void *remote = at_heap_offset<void>(peer, offset);
  copy_bytes<Scope>(remote, src, nbytes);
  group<Scope>::sync();
  if (group<Scope>::rank() == 0) signal_release(remote_sig, signal, sig_op, call, st);
  group<Scope>::sync();
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
  const uint64_t offset = tshmemi::heap_offset_of(sig_addr, st);
  if (__builtin_expect(peer == 0, 0)) {
    if (sig_op != TSHMEM_SIGNAL_SET && sig_op != TSHMEM_SIGNAL_ADD)
      tshmemi::trap_bad_operator("tshmem_signal_op", sig_op, st.my_pe);
    tshmemi::proxy::signal(offset, signal, sig_op, pe, "tshmem_signal_op", st);
    return;
  }
  tshmemi::signal_release(tshmemi::at_heap_offset<uint64_t>(peer, offset), signal, sig_op, "tshmem_signal_op", st);
}

TSHMEMI_DEVICE uint64_t signal_wait_until(const uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                          const tshmemi_device_state &st) {
  return tshmemi::spin_until(sig_addr, cmp, cmp_value, "tshmem_signal_wait_until", st);
}

TSHMEMI_DEVICE uint64_t signal_fetch(const uint64_t *sig_addr) { return tshmemi::load_acquire_sys(sig_addr); }

}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_SIGNAL_CUH
