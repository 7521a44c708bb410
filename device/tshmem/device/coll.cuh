/*
 * Device collectives on a team (tshmem_team_t: TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE), over NVLink loads and
 * stores, or multimem where the team has a multicast address (all-reduce).
 *
 * Two forms of each:
 *   *_block: all threads of ONE block per PE call, with the same arguments; the block pairs with the block of
 *            the same blockIdx.x on every other member (blockIdx.x < TSHMEMI_COLL_MAX_ROWS; an LL all-reduce
 *            allows blockIdx.x < TSHMEMI_COLL_LL_MAX_ROWS).
 *   *_grid:  every thread of every block of one grid per PE calls (gridDim.x <= TSHMEMI_COLL_MAX_ROWS, or
 *            TSHMEMI_COLL_LL_MAX_ROWS for an all-reduce that takes the LL form); block b
 *            moves slice b of the data and pairs with block b elsewhere, so no grid-wide sync is needed,
 *            except in barrier_grid, which requires co-resident blocks (like tshmem::barrier_all_grid).
 * Every collective starts with a barrier of its block row (the members' inputs are ready) and ends with one
 * (the members' outputs are written, the inputs no longer read), so buffers may be reused at once after it;
 * the LL all-reduce needs neither (it reads peers' data only from its own internal area).
 * Rules: same counts and symmetric buffers on every member; one collective at a time per block row; team
 * size <= TSHMEMI_COLL_MAX_TEAM. Element types T: float, __half, __nv_bfloat16, int32_t, int64_t.
 *
 * Results: accumulation in team-index order (0 .. n-1), floats in f32 rounded once to T, integers wrap;
 * identical on every PE and run to run (multimem.cuh explains why multicast sums agree for n <= 2).
 * All-reduce: `two_shot` false = one-shot. When the part of each block row fits that row's LL slots (512 lines of
 * 12 data bytes per row at 2 PEs, 8 bytes for 8-byte types; 512 / (n - 1) lines in general:
 * TSHMEMI_COLL_LL_ROW_LINES; rows up to TSHMEMI_COLL_LL_MAX_ROWS) it is the LL form: every member pushes its
 * src as {data, flag} words into its peers' internal LL area and reduces what arrives, with no barrier (in
 * place allowed; each row counts its LL calls, so every member must make the same calls per row); otherwise
 * every member reads every member's src between two barriers (out of place only).
 * `two_shot` true = reduce-scatter + all-gather (in place allowed): at 2 PEs out of place without multicast,
 * by stores only (each member first stores its src's half of the peer's range into the peer's dst, then
 * reduces its own range and stores the result to both dsts); otherwise member i reads every member's share i
 * and pushes the result to every member (multimem ld_reduce + st where the team has multicast). The host
 * on-stream forms choose by size (LL up to TSHMEMX_ALLREDUCE_ONESHOT_MAX when it fits, else two-shot).
 *
 * Flags: row r's barrier words live in tshmem's internal heap region (impl/coll.cuh lays them out).
 *
 * Across nodes (TSHMEM_TEAM_WORLD of a job over several nodes; impl/coll_spanning.cuh): the same forms, rules and
 * results, through NVLink inside a node and the off-node proxy between nodes, staged through the last 1.06 MiB
 * of the heap; every form there needs blockIdx.x < TSHMEMI_COLL_MAX_ROWS, gridDim.x <= it (there is no LL form).
 */
#ifndef TSHMEM_DEVICE_COLL_CUH
#define TSHMEM_DEVICE_COLL_CUH

#include "tshmem/device/multimem.cuh"
#include "tshmem/device/rma.cuh"  // declared (with their default arguments) before impl/coll.cuh defines them

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmem {
namespace coll {

template <class T>
TSHMEMI_DEVICE void allreduce_block(tshmem_team_t team, T *dst, const T *src, size_t count, redop op, bool two_shot,
                                    const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void allreduce_grid(tshmem_team_t team, T *dst, const T *src, size_t count, redop op, bool two_shot,
                                   const tshmemi_device_state &st = tshmemi::state());
/// dst[0..count) = op over members of src[my_index * count + k].
template <class T>
TSHMEMI_DEVICE void reduce_scatter_block(tshmem_team_t team, T *dst, const T *src, size_t count, redop op,
                                         const tshmemi_device_state &st = tshmemi::state());
template <class T>
TSHMEMI_DEVICE void reduce_scatter_grid(tshmem_team_t team, T *dst, const T *src, size_t count, redop op,
                                        const tshmemi_device_state &st = tshmemi::state());
/// fcollect: dst[i * nbytes ..] = member i's src.
TSHMEMI_DEVICE void fcollect_block(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                   const tshmemi_device_state &st = tshmemi::state());
TSHMEMI_DEVICE void fcollect_grid(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                  const tshmemi_device_state &st = tshmemi::state());
/// dst[i * nbytes ..] on member j = member i's src[j * nbytes ..].
TSHMEMI_DEVICE void alltoall_block(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                   const tshmemi_device_state &st = tshmemi::state());
TSHMEMI_DEVICE void alltoall_grid(tshmem_team_t team, void *dst, const void *src, size_t nbytes,
                                  const tshmemi_device_state &st = tshmemi::state());
/// dst = member `root`'s src on every member (pulled from the root).
TSHMEMI_DEVICE void broadcast_block(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root,
                                    const tshmemi_device_state &st = tshmemi::state());
TSHMEMI_DEVICE void broadcast_grid(tshmem_team_t team, void *dst, const void *src, size_t nbytes, int root,
                                   const tshmemi_device_state &st = tshmemi::state());
/// Team barrier: earlier writes of the calling block (grid) are visible to every member after it.
TSHMEMI_DEVICE void barrier_block(tshmem_team_t team, const tshmemi_device_state &st = tshmemi::state());
TSHMEMI_DEVICE void barrier_grid(tshmem_team_t team, const tshmemi_device_state &st = tshmemi::state());

}  // namespace coll
}  // namespace tshmem
#endif  // TSHMEM_DEVICE_COMPILE

#include "tshmem/device/impl/coll.cuh"

#endif  // TSHMEM_DEVICE_COLL_CUH
