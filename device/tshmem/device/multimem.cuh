/*
 * NVLink multicast on the device: multimem loads-with-reduction, stores and reductions, each with a unicast
 * twin that gives the same result without multicast.
 *
 * Addresses. Every function takes the LOCAL symmetric address of the object (as tshmem_malloc returned
 * it) and a team; `mc_ptr(team, p)` is its multicast twin (nullptr when multicast is off: forbidden by
 * TSHMEM_DISABLE_NVLS / NVSHMEM_DISABLE_NVLS / NCCL_NVLS_ENABLE=0, unsupported, or the team spans nodes).
 * The `*_mc` functions take a multicast address and emit one multimem instruction; the `*_unicast` twins take
 * the local address and reach every team member's copy through the remote-address function (remote_ptr);
 * the plain names pick the multimem form when mc_ptr is non-null and the twin otherwise.
 *
 * Element types T and vector widths N (what the PTX ISA allows for multimem on sm_90, checked by ptxas):
 *   float            ld_reduce/red: sum only (the ISA has no f32 min/max); st; N = 1, 2, 4
 *   __half2          ld_reduce: sum (accumulated in f32: .acc::f32), min, max; red: sum, min, max; st; N = 1, 2, 4
 *                    (red min/max: N = 2 or 4 only: the ISA has no scalar 16-bit min/max reduction)
 *   __nv_bfloat162   as __half2
 *   int32_t/uint32_t ld_reduce/red: sum, min, max; st; N = 1 (no vector forms for integers)
 *   int64_t/uint64_t ld_reduce/red: sum (as u64: two's complement), min, max; st; N = 1
 * Anything else fails to compile with a static_assert naming the rule.
 *
 * Semantics: relaxed at system scope (.relaxed.sys), like a plain strong access to every member's copy; order
 * them with fences, signals or barriers. The signals below are releases.
 *
 * "Identical" results, exactly:
 *   ld_reduce twin: reads member 0, 1, ..., n-1 (team-index order) and accumulates in that order; floats in
 *   f32 (f16/bf16 converted exactly to f32, one rounding to the element type at the end, round to nearest
 *   even: what .acc::f32 does), integers in two's complement, min/max exactly. For n <= 2 this IS the
 *   multimem result (f32 addition of two operands is commutative); for n > 2 the switch's order is not
 *   specified, so float sums may differ in the last bit while integer, min and max results are identical.
 *   Twin and CPU reference (same order) agree bit for bit at any n.
 *   st twin: one store per member. red twin: one atomic per member (red.relaxed.sys): the same final values
 *   as multimem.red up to the (unspecified, in both) order of concurrent float additions.
 */
#ifndef TSHMEM_DEVICE_MULTIMEM_CUH
#define TSHMEM_DEVICE_MULTIMEM_CUH

#include "tshmem/device/impl/team.cuh"
#include "tshmem/device/remote_ptr.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tshmem {

/// Reduction operators of the collective API; multimem (the ISA's ld_reduce/red) has sum, min and max only.
/// band, bor, bxor are bitwise (integer types); C++ reserves and/or/xor.
enum class redop { sum = 0, min = 1, max = 2, prod = 3, band = 4, bor = 5, bxor = 6 };

/// N elements of T, aligned to their size (4, 8 or 16 bytes): one register operand group of a multimem op.
template <class T, int N>
struct alignas(sizeof(T) * N) vec {
  T v[N];
};

/// The multicast address of `ptr` for `team`, or nullptr (no multicast, not in the heap, team beyond the node).
template <class T>
TSHMEMI_DEVICE T *mc_ptr(tshmem_team_t team, T *ptr, const tshmemi_device_state &st = tshmemi::state());

namespace mm {

/// multimem.ld_reduce on a multicast address: the reduction over every member's copy.
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE vec<T, N> ld_reduce_mc(const T *mc);
/// multimem.st: stores `value` into every member's copy.
template <class T, int N = 1>
TSHMEMI_DEVICE void st_mc(T *mc, const vec<T, N> &value);
/// multimem.red: reduces `value` into every member's copy.
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE void red_mc(T *mc, const vec<T, N> &value);

/// Unicast twins: same results through remote_ptr, member by member in team-index order.
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE vec<T, N> ld_reduce_unicast(const team_view &team, const T *sym,
                                           const tshmemi_device_state &st = tshmemi::state());
template <class T, int N = 1>
TSHMEMI_DEVICE void st_unicast(const team_view &team, T *sym, const vec<T, N> &value,
                               const tshmemi_device_state &st = tshmemi::state());
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE void red_unicast(const team_view &team, T *sym, const vec<T, N> &value,
                                const tshmemi_device_state &st = tshmemi::state());

/// The API: multimem when the team has a multicast address for `sym`, else the unicast twin.
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE vec<T, N> ld_reduce(tshmem_team_t team, const T *sym, const tshmemi_device_state &st = tshmemi::state());
template <class T, int N = 1>
TSHMEMI_DEVICE void st(tshmem_team_t team, T *sym, const vec<T, N> &value,
                       const tshmemi_device_state &st = tshmemi::state());
template <redop Op, class T, int N = 1>
TSHMEMI_DEVICE void red(tshmem_team_t team, T *sym, const vec<T, N> &value,
                        const tshmemi_device_state &st = tshmemi::state());

/// Multimem signals on a symmetric uint64_t: after a fence.acq_rel.sys, set (st.release) or add
/// (red.release.add) `value` on every member's copy; one thread calls. Twins: a release per member.
TSHMEMI_DEVICE void signal_set(tshmem_team_t team, uint64_t *sig, uint64_t value,
                               const tshmemi_device_state &st = tshmemi::state());
TSHMEMI_DEVICE void signal_add(tshmem_team_t team, uint64_t *sig, uint64_t value,
                               const tshmemi_device_state &st = tshmemi::state());

}  // namespace mm
}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/multimem.cuh"

#endif  // TSHMEM_DEVICE_MULTIMEM_CUH
