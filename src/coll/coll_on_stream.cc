// The on-stream collectives (tshmemx_*_on_stream, entered from src/api/coll_api.cc): argument checks on the host,
// then one kernel launch (coll_kernels.cu). No host synchronisation and no collective call on the host: the forms
// can be captured in a CUDA graph.
//
// Checks are local and deterministic (they depend only on the arguments, which the rules require to be
// the same on every member), so members that pass the same bad arguments all fail alike, with the same
// message, and none launches; see tshmemx.h for what happens when members diverge.
#include <algorithm>

#include "coll/coll_on_stream.h"

#include "coll/coll_launch.h"
#include "coll/coll_spanning.h"
#include "tshmem/device/internal_regions.h"  // TSHMEMI_COLL_MAX_ROWS, TSHMEMI_COLL_MAX_TEAM, the LL rows
#include "tshmem/tshmem.h"

namespace tshmemi {
namespace {

constexpr int kThreads = 512;

size_t dtype_size(tshmemx_dtype_t dtype) {
  switch (dtype) {
    case TSHMEMX_DTYPE_FLOAT: return 4;
    case TSHMEMX_DTYPE_HALF: return 2;
    case TSHMEMX_DTYPE_BFLOAT16: return 2;
    case TSHMEMX_DTYPE_INT32: return 4;
    case TSHMEMX_DTYPE_INT64: return 8;
    case TSHMEMX_DTYPE_DOUBLE: return 8;
    case TSHMEMX_DTYPE_UINT32: return 4;
    case TSHMEMX_DTYPE_UINT64: return 8;
    case TSHMEMX_NUM_DTYPES: break;
  }
  return 0;
}

bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

/// Blocks for a collective that moves `bytes_per_pe`: one per `per_block` bytes, 1 .. TSHMEMI_COLL_MAX_ROWS.
/// Copies (stores, fire and forget) pay off another block every 64 KiB; the reducing kinds, whose remote
/// loads are latency-bound, every 16 KiB (more loads in flight).
int blocks_for(size_t bytes_per_pe, size_t per_block = 64 * 1024) {
  return static_cast<int>(std::clamp<size_t>((bytes_per_pe + per_block - 1) / per_block, 1, TSHMEMI_COLL_MAX_ROWS));
}

/// LL all-reduce shape for `lines` lines: threads per block and the rows that give each thread about one line.
/// Small calls want many small blocks (more SMs pushing and polling at once, each block done sooner); larger
/// ones larger blocks, since the rows are capped at TSHMEMI_COLL_LL_MAX_ROWS. Measured on 2 x H200 (bf16, in
/// a CUDA graph): 128 threads best up to ~128 KiB, 256 at 256 KiB, 512 at 512 KiB.
int ll_threads(size_t lines) {
  constexpr size_t kRows = TSHMEMI_COLL_LL_MAX_ROWS;
  return lines <= kRows * 128 ? 128 : lines <= kRows * 256 ? 256 : 512;
}
size_t ll_rows_wanted(size_t lines) {
  const size_t threads = static_cast<size_t>(ll_threads(lines));
  return std::min<size_t>((lines + threads - 1) / threads, TSHMEMI_COLL_LL_MAX_ROWS);
}

/// Checks common to every collective; fills the team.
Status check_common(const CollRuntime &rt, const char *call, tshmem_team_t team, TeamInfo *info) {
  if (!rt.mem.device_memory())
    return set_error(TSHMEM_ERR_CONFIG, "%s: collectives run on the GPU: the %s backend has no GPU heap", call,
                     rt.mem.name());
  TSHMEM_CHECK(rt.teams.lookup(team, call, info));
  // Across nodes: the spanning path (the world team, through the off-node proxy; coll_spanning.h).
  if (!info->node_local) TSHMEM_CHECK(check_spanning_team(rt, call, team));
  if (info->size > TSHMEMI_COLL_MAX_TEAM)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: team of %d PEs exceeds the %d the collectives support", call,
                     info->size, TSHMEMI_COLL_MAX_TEAM);
  return TSHMEM_SUCCESS;
}

Status check_buffer(const CollRuntime &rt, const char *call, const char *name, const void *ptr, size_t bytes,
                    size_t alignment) {
  if (ptr == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: %s is NULL", call, name);
  TSHMEM_CHECK(rt.heap.check_user_range(call, name, ptr, bytes));
  if (reinterpret_cast<uintptr_t>(ptr) % alignment != 0)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: %s = %p is not aligned to its element size (%zu bytes)", call, name,
                     ptr, alignment);
  return TSHMEM_SUCCESS;
}

Status check_reduction(const char *call, size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  if (count == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count is 0", call);
  if (static_cast<unsigned>(dtype) >= TSHMEMX_NUM_DTYPES)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: unsupported dtype %d (float, half, bfloat16, int32, int64, double, uint32, uint64)", call,
                     static_cast<int>(dtype));
  if (static_cast<unsigned>(op) >= TSHMEMX_NUM_OPS)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: unsupported op %d (sum, min, max, prod, and, or, xor)", call,
                     static_cast<int>(op));
  const bool bitwise = op == TSHMEMX_OP_AND || op == TSHMEMX_OP_OR || op == TSHMEMX_OP_XOR;
  const bool integer = dtype == TSHMEMX_DTYPE_INT32 || dtype == TSHMEMX_DTYPE_INT64 || dtype == TSHMEMX_DTYPE_UINT32 ||
                       dtype == TSHMEMX_DTYPE_UINT64;
  if (bitwise && !integer)
    return set_error(TSHMEM_ERR_INVALID_ARG,
                     "%s: op %d (and, or, xor) is bitwise: it needs an integer dtype (int32, int64, uint32, uint64), "
                     "not dtype %d",
                     call, static_cast<int>(op), static_cast<int>(dtype));
  return TSHMEM_SUCCESS;
}

/// The launch of a reducing collective (all-reduce, reduce-scatter) on `team`; its grid is the caller's.
CollLaunch reducing_launch(CollKind kind, tshmem_team_t team, const TeamInfo &team_view, void *dst, const void *src,
                           size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op) {
  CollLaunch launch;
  launch.kind = kind;
  launch.dtype = dtype;
  launch.op = op;
  launch.team = team;
  launch.spanning = team_view.spans_nodes;  // the kernels of coll_spanning_kernels.cuh
  launch.dst = dst;
  launch.src = src;
  launch.count = count;
  return launch;
}

}  // namespace

Status coll_allreduce(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                      size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream,
                      bool check_only) {
  TeamInfo team_view;
  TSHMEM_CHECK(check_common(rt, call, team, &team_view));
  TSHMEM_CHECK(check_reduction(call, count, dtype, op));
  const size_t elem = dtype_size(dtype);
  if (count > rt.heap.size() / elem)
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count %zu exceeds the heap", call, count);
  const size_t bytes = count * elem;
  TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, bytes, elem));
  TSHMEM_CHECK(check_buffer(rt, call, "src", src, bytes, elem));
  if (dst != src && overlap(dst, bytes, src, bytes))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst and src overlap without being equal (in place needs dst == src)",
                     call);
  if (check_only) return TSHMEM_SUCCESS;
  CollLaunch launch = reducing_launch(CollKind::kAllreduce, team, team_view, dst, src, count, dtype, op);
  // Across nodes the kernel takes the spanning path (impl/coll_spanning.cuh), which has no LL form: block rows
  // as for the reducing kinds, within TSHMEMI_COLL_MAX_ROWS.
  if (team_view.spans_nodes)
    return coll_launch(launch, blocks_for(bytes, 64 * 1024), kThreads, rt.early_launch, stream);
  // Up to TSHMEMX_ALLREDUCE_ONESHOT_MAX: the LL one-shot (no barrier; in place allowed) on enough block rows
  // that each row's lines fit its LL slots and each thread has about one line; otherwise two-shot. Split teams
  // have no LL slots of their own (impl/coll.cuh): always the barrier-bracketed form.
  if (bytes <= TSHMEMX_ALLREDUCE_ONESHOT_MAX && team_view.predefined) {
    const size_t per_line = TSHMEMI_COLL_LL_LINE_BYTES(elem) / elem;
    const size_t lines = (count + per_line - 1) / per_line;
    const size_t cap = TSHMEMI_COLL_LL_ROW_LINES(team_view.size);
    const size_t rows = std::max(ll_rows_wanted(lines), (lines + cap - 1) / cap);
    if (rows <= TSHMEMI_COLL_LL_MAX_ROWS) {
      launch.two_shot = false;
      return coll_launch(launch, static_cast<int>(rows), ll_threads(lines), rt.early_launch, stream);
    }
  }
  launch.two_shot = true;
  return coll_launch(launch, blocks_for(bytes / static_cast<size_t>(team_view.size), 16 * 1024), kThreads,
                     rt.early_launch, stream);
}

Status coll_reduce_scatter(const CollRuntime &rt, const char *call, tshmem_team_t team, void *dst, const void *src,
                           size_t count, tshmemx_dtype_t dtype, tshmemx_redop_t op, tshmemx_stream_t stream) {
  TeamInfo team_view;
  TSHMEM_CHECK(check_common(rt, call, team, &team_view));
  TSHMEM_CHECK(check_reduction(call, count, dtype, op));
  const size_t elem = dtype_size(dtype);
  if (count > rt.heap.size() / elem / static_cast<size_t>(team_view.size))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: count %zu x %d PEs exceeds the heap", call, count, team_view.size);
  const size_t bytes = count * elem;
  TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, bytes, elem));
  TSHMEM_CHECK(check_buffer(rt, call, "src", src, bytes * static_cast<size_t>(team_view.size), elem));
  if (overlap(dst, bytes, src, bytes * static_cast<size_t>(team_view.size)))
    return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst overlaps src", call);
  CollLaunch launch = reducing_launch(CollKind::kReduceScatter, team, team_view, dst, src, count, dtype, op);
  return coll_launch(launch, blocks_for(bytes, 16 * 1024), kThreads, rt.early_launch, stream);
}

Status coll_move(const CollRuntime &rt, CollKind kind, const char *call, tshmem_team_t team, void *dst, const void *src,
                 size_t nbytes, int root, tshmemx_stream_t stream, bool check_only) {
  TeamInfo team_view;
  TSHMEM_CHECK(check_common(rt, call, team, &team_view));
  CollLaunch launch;
  launch.kind = kind;
  launch.team = team;
  launch.spanning = team_view.spans_nodes;  // the kernels of coll_spanning_kernels.cuh
  if (kind != CollKind::kBarrier) {
    if (nbytes == 0) return set_error(TSHMEM_ERR_INVALID_ARG, "%s: nbytes is 0", call);
    const size_t n = static_cast<size_t>(team_view.size);
    if (nbytes > rt.heap.size() / n)
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: nbytes %zu exceeds the heap", call, nbytes);
    const size_t dst_bytes = kind == CollKind::kBroadcast ? nbytes : nbytes * n;
    const size_t src_bytes = kind == CollKind::kAlltoall ? nbytes * n : nbytes;
    TSHMEM_CHECK(check_buffer(rt, call, "dst", dst, dst_bytes, 1));
    TSHMEM_CHECK(check_buffer(rt, call, "src", src, src_bytes, 1));
    if (kind == CollKind::kBroadcast && (root < 0 || root >= team_view.size))
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: root %d outside the team [0, %d)", call, root, team_view.size);
    if (!(kind == CollKind::kBroadcast && dst == src) && overlap(dst, dst_bytes, src, src_bytes))
      return set_error(TSHMEM_ERR_INVALID_ARG, "%s: dst overlaps src", call);
    if (check_only) return TSHMEM_SUCCESS;
    launch.dst = dst;
    launch.src = src;
    launch.count = nbytes;
    launch.root = root;
    return coll_launch(launch, blocks_for(kind == CollKind::kBroadcast ? nbytes : nbytes * n), kThreads,
                       rt.early_launch, stream);
  }
  if (check_only) return TSHMEM_SUCCESS;
  return coll_launch(launch, 1, 32, rt.early_launch, stream);
}

}  // namespace tshmemi
