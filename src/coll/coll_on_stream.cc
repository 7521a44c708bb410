// The on-stream collectives (tshmemx_*_on_stream, entered from src/api/coll_api.cc): argument checks on the host,
// then one kernel launch (coll_kernels.cu). No host synchronisation and no collective call on the host: the forms
// can be captured in a CUDA graph.
//
// Checks are local and deterministic (they depend only on the arguments, which the rules require to be
// the same on every member), so members that pass the same bad arguments all fail alike, with the same
// message, and none launches; see tshmemx.h for what happens when members diverge.
#include <algorithm>

#include "coll/coll_on_stream.h"

#include "coll/coll_checks.h"
#include "coll/coll_launch.h"
#include "tshmem/device/internal_regions.h"  // TSHMEMI_COLL_MAX_ROWS, TSHMEMI_COLL_MAX_TEAM, the LL rows
#include "tshmem/tshmem.h"

namespace tshmemi {
namespace {

constexpr int kThreads = 512;

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

/// The on-stream forms are kernels: a heap in host memory (shm) has none to run.
Status check_gpu_heap(const CollRuntime &rt, const char *call) {
  if (!rt.mem.device_memory())
    return set_error(TSHMEM_ERR_CONFIG,
                     "%s: the on-stream collectives run on the GPU: the %s heap is host memory (use the host-blocking "
                     "forms)",
                     call, rt.mem.name());
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
  TSHMEM_CHECK(check_gpu_heap(rt, call));
  TeamInfo team_view;
  TSHMEM_CHECK(check_allreduce_args(rt, call, team, dst, src, count, dtype, op, &team_view));
  const size_t elem = dtype_size(dtype);
  const size_t bytes = count * elem;
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
  TSHMEM_CHECK(check_gpu_heap(rt, call));
  TeamInfo team_view;
  TSHMEM_CHECK(check_reduce_scatter_args(rt, call, team, dst, src, count, dtype, op, &team_view));
  const size_t bytes = count * dtype_size(dtype);
  CollLaunch launch = reducing_launch(CollKind::kReduceScatter, team, team_view, dst, src, count, dtype, op);
  return coll_launch(launch, blocks_for(bytes, 16 * 1024), kThreads, rt.early_launch, stream);
}

Status coll_move(const CollRuntime &rt, CollKind kind, const char *call, tshmem_team_t team, void *dst, const void *src,
                 size_t nbytes, int root, tshmemx_stream_t stream, bool check_only) {
  TSHMEM_CHECK(check_gpu_heap(rt, call));
  TeamInfo team_view;
  TSHMEM_CHECK(check_move_args(rt, kind, call, team, dst, src, nbytes, root, &team_view));
  if (check_only) return TSHMEM_SUCCESS;
  CollLaunch launch;
  launch.kind = kind;
  launch.team = team;
  launch.spanning = team_view.spans_nodes;  // the kernels of coll_spanning_kernels.cuh
  if (kind != CollKind::kBarrier) {
    const size_t n = static_cast<size_t>(team_view.size);
    launch.dst = dst;
    launch.src = src;
    launch.count = nbytes;
    launch.root = root;
    return coll_launch(launch, blocks_for(kind == CollKind::kBroadcast ? nbytes : nbytes * n), kThreads,
                       rt.early_launch, stream);
  }
  return coll_launch(launch, 1, 32, rt.early_launch, stream);
}

}  // namespace tshmemi
