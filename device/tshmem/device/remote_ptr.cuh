/*
 * The one remote-address function: where this PE reaches PE `pe`'s copy of a symmetric object.
 *
 *   remote = peer_base[pe] + (local - heap_base)
 *
 * This header (with its body in impl/remote_ptr.cuh) is the only device code that reads `heap_base`; a
 * test (device_heap_base_confined) greps the device headers to keep it so. Every put, get, atomic, signal
 * and barrier translates its address here, so the PE bound check is in one place.
 */
#ifndef TSHMEM_DEVICE_REMOTE_PTR_CUH
#define TSHMEM_DEVICE_REMOTE_PTR_CUH

#include "tshmem/device/state.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {

/// Address of `pe`'s copy of the symmetric object at `local`, for a PE that is the same for all lanes that
/// call together (reads the peer table of `st`: the constant cache serves a uniform PE in one access).
/// Checks (unless TSHMEM_DEVICE_PE_CHECK=0) that 0 <= pe < n_pes; on a violation the first active lane of
/// the warp prints `tshmem: <call>: PE <pe> out of range [0, <n_pes>) on PE <me> (block (x,y,z), thread
/// (x,y,z))` and the thread traps, touching no memory. A PE with no load/store path (peer_base 0: another
/// node) always traps with `... PE <pe> is not reachable by load/store from PE <me> ...`.
/// `local` must lie in this PE's symmetric heap (not checked).
template <class T>
TSHMEMI_DEVICE T *remote_ptr(T *local, int pe, const char *call, const tshmemi_device_state &st = state());

/// As remote_ptr, for calls where lanes of one warp may name different PEs: reads the global mirror of the
/// peer table through the read-only cache (`__ldg(peer_base_global + pe)`), which does not serialise a
/// divergent fan-out the way the constant cache does. Same checks and messages.
template <class T>
TSHMEMI_DEVICE T *remote_ptr_lane(T *local, int pe, const char *call, const tshmemi_device_state &st = state());

/// Non-trapping translation for tshmem::ptr: NULL when `pe` is out of range, unreachable by load/store, or
/// `local` is outside this PE's heap. translate_or_null(p, my_pe) == p for every heap address p.
template <class T>
TSHMEMI_DEVICE T *translate_or_null(T *local, int pe, const tshmemi_device_state &st = state());

/// This PE's own heap base as a byte pointer (the own slot of the peer table). For tshmem's internal
/// region (device barrier counters), which starts there.
TSHMEMI_DEVICE char *own_heap_base(const tshmemi_device_state &st = state());

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/remote_ptr.cuh"

#endif  // TSHMEM_DEVICE_REMOTE_PTR_CUH
